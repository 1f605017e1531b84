// tests/dashboard/check.mjs - the checks behind tests/dashboard/check.sh: the Grafana
// dashboard, the Prometheus config and the compose file against a real scrape of verdictd.
//
//   node check.mjs static  ROOT SCRAPE_FILE        dashboard, provisioning and compose checks
//   node check.mjs promcfg ROOT OUT_DIR TARGET TOKEN   derive a test config from
//                                                   docker/prometheus/prometheus.yml
//   node check.mjs live    ROOT PROM_URL            evaluate every panel query on a real
//                                                   Prometheus that scraped verdictd
//
// Prints one "PASS ..." or "FAIL ..." line per check; exits 1 when any check failed.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';

let failures = 0;
const pass = (msg) => console.log(`PASS ${msg}`);
const fail = (msg) => { failures++; console.log(`FAIL ${msg}`); };

// ---- YAML: js-yaml from tests/openapi/node_modules (scripts/openapi.sh installs it), else
// PyYAML through python3 -------------------------------------------------------------------
function yamlLoader(root) {
  const req = createRequire(path.join(root, 'tests/openapi/package.json'));
  try {
    const yaml = req('js-yaml');
    return { name: 'js-yaml', load: (text) => yaml.load(text), dump: (o) => yaml.dump(o, { lineWidth: -1 }) };
  } catch {
    const py = (code, input) => execFileSync('python3', ['-c', code], { input, encoding: 'utf8' });
    py('import yaml', '');
    return {
      name: 'PyYAML',
      load: (text) => JSON.parse(py('import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))', text)),
      dump: (o) => JSON.stringify(o, null, 2), // JSON is YAML
    };
  }
}

// ---- the scrape: series name -> label -> set of values -----------------------------------
function parseScrape(text) {
  const series = new Map(), types = new Map();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let m;
    if ((m = /^# TYPE (\S+) (\S+)/.exec(line))) { types.set(m[1], m[2]); continue; }
    if (line.startsWith('#')) continue;
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+\S+/.exec(line);
    if (!m) throw new Error(`cannot parse sample line: ${line}`);
    const labels = {};
    if (m[2]) {
      const re = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/gy;
      const body = m[2].slice(1, -1);
      let lm;
      re.lastIndex = 0;
      while (re.lastIndex < body.length && (lm = re.exec(body))) labels[lm[1]] = lm[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    if (!series.has(m[1])) series.set(m[1], new Map());
    const s = series.get(m[1]);
    for (const [k, v] of Object.entries(labels)) {
      if (!s.has(k)) s.set(k, new Set());
      s.get(k).add(v);
    }
  }
  return { series, types };
}

// ---- a small PromQL tokenizer and the facts the checks need ------------------------------
const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left',
  'group_right', 'bool', 'offset', 'inf', 'nan']);
const AGGREGATORS = new Set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count',
  'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio']);

function tokenize(expr) {
  const toks = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i];
    if (/\s/.test(c)) { i++; continue; }
    if (c === '"' || c === "'" || c === '`') {
      let j = i + 1, v = '';
      while (j < expr.length && expr[j] !== c) {
        if (expr[j] === '\\' && c !== '`') { v += expr[j + 1]; j += 2; } else v += expr[j++];
      }
      if (j >= expr.length) throw new Error('unterminated string');
      toks.push({ t: 'str', v }); i = j + 1; continue;
    }
    if (c === '[') { // range or subquery: skip to the closing bracket
      const j = expr.indexOf(']', i);
      if (j < 0) throw new Error('unterminated [');
      toks.push({ t: 'range', v: expr.slice(i + 1, j) }); i = j + 1; continue;
    }
    let m;
    if ((m = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(expr.slice(i)))) { toks.push({ t: 'id', v: m[0] }); i += m[0].length; continue; }
    if ((m = /^(0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?[a-zA-Z]*)/.exec(expr.slice(i)))) { toks.push({ t: 'num', v: m[0] }); i += m[0].length; continue; }
    if ((m = /^(=~|!~|!=|==|>=|<=|=|[-+*/%^<>(){},@])/.exec(expr.slice(i)))) { toks.push({ t: 'op', v: m[0] }); i += m[0].length; continue; }
    throw new Error(`unexpected character '${c}' at ${i}`);
  }
  return toks;
}

function matching(toks, i) { // index of the bracket matching toks[i] ("(" or "{", or ")" backwards)
  const open = toks[i].v, pairs = { '(': ')', '{': '}', ')': '(' };
  const close = pairs[open], step = open === ')' ? -1 : 1;
  for (let d = 0, j = i; j >= 0 && j < toks.length; j += step) {
    if (toks[j].t !== 'op') continue;
    if (toks[j].v === open) d++;
    else if (toks[j].v === close && --d === 0) return j;
  }
  throw new Error(`unbalanced '${open}'`);
}

// -> {selectors: [{name, matchers: [{label, op, value}], at}], groupings: [{labels, from, to}], functions}
function analyse(expr) {
  const toks = tokenize(expr), selectors = [], groupings = [], functions = new Set();
  const labelList = (i) => { // toks[i] is "(": identifiers up to the matching ")"
    const end = matching(toks, i), labels = [];
    for (let j = i + 1; j < end; j++) if (toks[j].t === 'id' || toks[j].t === 'str') labels.push(toks[j].v);
    return { labels, end };
  };
  const matchers = (i) => { // toks[i] is "{"
    const end = matching(toks, i), ms = [];
    for (let j = i + 1; j < end;) {
      const [l, o, v] = [toks[j], toks[j + 1], toks[j + 2]];
      if (!l || !o || !v || !['id', 'str'].includes(l.t) || o.t !== 'op' || v.t !== 'str') throw new Error('bad label matcher');
      ms.push({ label: l.v, op: o.v, value: v.v });
      j += 3;
      if (j < end && toks[j].v === ',') j++;
    }
    return { ms, end };
  };
  for (let i = 0; i < toks.length; i++) {
    const tk = toks[i], next = toks[i + 1];
    if (tk.t === 'op' && tk.v === '{') { // a selector without a metric name
      const { ms, end } = matchers(i);
      const nameM = ms.find((m) => m.label === '__name__' && m.op === '=');
      selectors.push({ name: nameM ? nameM.value : null, matchers: ms.filter((m) => m.label !== '__name__'), at: i });
      i = end; continue;
    }
    if (tk.t !== 'id') continue;
    if (['by', 'without', 'on', 'ignoring', 'group_left', 'group_right'].includes(tk.v)) {
      if (!next || next.v !== '(') { if (tk.v.startsWith('group_')) continue; throw new Error(`'${tk.v}' without a label list`); }
      const { labels, end } = labelList(i + 1);
      if (tk.v === 'by' || tk.v === 'without') {
        let from, to;
        const prev = toks[i - 1];
        if (prev && prev.t === 'id' && AGGREGATORS.has(prev.v)) { from = end + 1; to = matching(toks, end + 1); }
        else if (prev && prev.v === ')') { to = i - 1; from = matching(toks, i - 1); }
        else throw new Error(`cannot tell what '${tk.v}' groups`);
        groupings.push({ kind: tk.v, labels, from, to });
      } else groupings.push({ kind: tk.v, labels, from: 0, to: toks.length - 1 });
      i = end; continue;
    }
    if (next && (next.v === '(' || (AGGREGATORS.has(tk.v) && (next.v === 'by' || next.v === 'without')))) {
      functions.add(tk.v); continue;
    }
    if (KEYWORDS.has(tk.v)) continue;
    const sel = { name: tk.v, matchers: [], at: i };
    if (next && next.v === '{') { const { ms, end } = matchers(i + 1); sel.matchers = ms; i = end; }
    selectors.push(sel);
  }
  return { selectors, groupings, functions };
}

// ---- template variables -------------------------------------------------------------------
const GRAFANA_INTERVALS = ['__rate_interval', '__interval', '__range', '__auto'];
function substitute(expr, varNames, intervals) {
  let out = expr;
  for (const v of GRAFANA_INTERVALS) {
    out = out.replaceAll(`\${${v}}`, intervals[v]).replace(new RegExp(`\\$${v}(?![A-Za-z0-9_])`, 'g'), intervals[v]);
  }
  out = out.replace(/\$\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|\[\[([A-Za-z0-9_]+)\]\]|\$([A-Za-z0-9_]+)/g, (all, a, b, c) => {
    const n = a || b || c;
    if (varNames.has(n)) return varNames.get(n);
    throw new Error(`unknown template variable ${all}`);
  });
  return out;
}

// every panel, rows' collapsed panels included
function allPanels(dash) {
  const out = [];
  const walk = (ps) => { for (const p of ps || []) { out.push(p); walk(p.panels); } };
  walk(dash.panels);
  return out;
}

function loadDashboard(root) {
  const file = path.join(root, 'docker/grafana/dashboards/verdict.json');
  return { file, dash: JSON.parse(fs.readFileSync(file, 'utf8')) };
}

function templateValues(dash) { // what "All" expands to: the allValue (a regex), else any value
  const vars = new Map();
  for (const v of dash.templating?.list || []) vars.set(v.name, v.allValue || '.+');
  return vars;
}

// ---- static checks --------------------------------------------------------------------------
function staticChecks(root, scrapeFile) {
  const yaml = yamlLoader(root);
  const { series, types } = parseScrape(fs.readFileSync(scrapeFile, 'utf8'));
  pass(`scrape parsed: ${types.size} families, ${series.size} series names (${[...types.keys()].join(', ')})`);

  // the Prometheus config: job name and target become the job/instance labels of every series
  const promFile = path.join(root, 'docker/prometheus/prometheus.yml');
  const prom = yaml.load(fs.readFileSync(promFile, 'utf8'));
  const job = (prom.scrape_configs || []).find((j) => (j.static_configs || []).some((s) => (s.targets || []).some((t) => /^verdict:\d+$/.test(t))));
  if (!job) { fail('prometheus.yml: no scrape job targets verdict:<port>'); return; }
  pass(`prometheus.yml: job "${job.job_name}" scrapes ${job.static_configs[0].targets.join(', ')}${job.metrics_path || '/metrics'} every ${job.scrape_interval || prom.global?.scrape_interval}`);
  const credFile = job.authorization?.credentials_file;
  if (!job.authorization || (job.authorization.type || 'Bearer') !== 'Bearer' || !(credFile || job.authorization.credentials))
    fail('prometheus.yml: the verdict job sends no bearer token (/metrics needs role reader)');
  const target = { job: [job.job_name], instance: job.static_configs.flatMap((s) => s.targets) };
  for (const [, labels] of series) for (const [k, v] of Object.entries(target)) labels.set(k, new Set(v));
  series.set('up', new Map(Object.entries(target).map(([k, v]) => [k, new Set(v)]))); // written by Prometheus

  alertChecks(root, yaml, prom, series);

  // provisioning: the datasource uid the dashboard must use
  const dsProv = yaml.load(fs.readFileSync(path.join(root, 'docker/grafana/provisioning/datasources/prometheus.yaml'), 'utf8'));
  const ds = (dsProv.datasources || []).find((d) => d.type === 'prometheus');
  if (!ds?.uid) { fail('datasource provisioning: no prometheus datasource with a uid'); return; }
  pass(`datasource provisioning: "${ds.name}" uid ${ds.uid} -> ${ds.url}`);

  let dash, file;
  try { ({ dash, file } = loadDashboard(root)); pass(`dashboard JSON parses (${path.relative(root, file)}, schemaVersion ${dash.schemaVersion}, uid ${dash.uid})`); }
  catch (e) { fail(`dashboard JSON: ${e.message}`); return; }
  if (!(dash.schemaVersion >= 36 && dash.schemaVersion <= 41)) fail(`dashboard schemaVersion ${dash.schemaVersion} is not Grafana 10/11's`);
  if (!dash.uid || !dash.title) fail('dashboard has no uid or title');

  const varNames = templateValues(dash);
  const intervals = { __rate_interval: '1m', __interval: '15s', __range: '1h', __auto: '1m' };
  const dsOk = (d, where) => {
    if (!d || d.type !== 'prometheus' || d.uid !== ds.uid) fail(`${where}: datasource ${JSON.stringify(d)} is not the provisioned {type: prometheus, uid: ${ds.uid}}`);
  };
  const labelOn = (name, label) => series.get(name)?.has(label);

  // template variables
  for (const v of dash.templating?.list || []) {
    dsOk(v.datasource, `variable $${v.name}`);
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    const m = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$/.exec(q || '');
    if (!m) { fail(`variable $${v.name}: query ${JSON.stringify(q)} is not label_values(metric, label)`); continue; }
    if (!series.has(m[1])) fail(`variable $${v.name}: metric ${m[1]} is not in the scrape`);
    else if (!labelOn(m[1], m[2])) fail(`variable $${v.name}: ${m[1]} has no label ${m[2]} (it has ${[...series.get(m[1]).keys()].join(', ')})`);
    else pass(`variable $${v.name}: label_values(${m[1]}, ${m[2]}) -> ${[...series.get(m[1]).get(m[2])].join(', ')}`);
  }

  // panels
  const panels = allPanels(dash), ids = new Set(), used = new Set();
  let nTargets = 0;
  for (const p of panels) {
    const where = `panel ${p.id} "${p.title}"`;
    if (ids.has(p.id)) fail(`${where}: duplicate panel id`);
    ids.add(p.id);
    if (!p.gridPos || ![p.gridPos.x, p.gridPos.y, p.gridPos.w, p.gridPos.h].every(Number.isInteger) || p.gridPos.x + p.gridPos.w > 24)
      fail(`${where}: bad gridPos ${JSON.stringify(p.gridPos)}`);
    if (p.type === 'row' || p.type === 'text') continue;
    dsOk(p.datasource, where);
    if (!p.targets?.length) { fail(`${where}: no queries`); continue; }
    for (const t of p.targets) {
      nTargets++;
      const tw = `${where} target ${t.refId}`;
      dsOk(t.datasource, tw);
      const problems = [];
      let a;
      try { a = analyse(substitute(t.expr, varNames, intervals)); }
      catch (e) { fail(`${tw}: ${e.message}: ${t.expr}`); continue; }
      if (!a.selectors.length) problems.push('selects no series');
      for (const s of a.selectors) {
        if (!s.name) { problems.push('a selector without a metric name'); continue; }
        if (!series.has(s.name)) { problems.push(types.get(s.name) === 'histogram' ? `${s.name} is a histogram family: select ${s.name}_bucket, _sum or _count` : types.has(s.name) ? `metric ${s.name} has no samples in the scrape (declared, but the workload produced none)` : `metric ${s.name} is not in the scrape`); continue; }
        used.add(s.name);
        for (const m of s.matchers) {
          const values = series.get(s.name).get(m.label);
          if (!values) { problems.push(`${s.name} has no label ${m.label}`); continue; }
          if (m.op === '=' && !values.has(m.value)) problems.push(`${s.name}{${m.label}="${m.value}"}: no such value in the scrape (${[...values].join(', ')})`);
          if (m.op === '=~' || m.op === '!~') {
            let re;
            try { re = new RegExp(`^(?:${m.value})$`); } catch (e) { problems.push(`${s.name}{${m.label}${m.op}"${m.value}"}: ${e.message}`); continue; }
            if (m.op === '=~' && ![...values].some((v) => re.test(v))) problems.push(`${s.name}{${m.label}=~"${m.value}"} matches no value in the scrape (${[...values].join(', ')})`);
          }
        }
      }
      for (const g of a.groupings) {
        const inside = a.selectors.filter((s) => s.at >= g.from && s.at <= g.to && series.has(s.name));
        for (const l of g.labels) for (const s of inside) if (!labelOn(s.name, l)) problems.push(`${g.kind} (${l}): ${s.name} has no label ${l}`);
      }
      for (const [, l] of (t.legendFormat || '').matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)) {
        if (!a.selectors.some((s) => labelOn(s.name, l))) problems.push(`legend {{${l}}}: no selected series has label ${l}`);
      }
      if (problems.length) fail(`${tw}: ${[...new Set(problems)].join('; ')} -- expr: ${t.expr}`);
      else pass(`${tw}: ${[...new Set(a.selectors.map((s) => s.name))].join(', ')}`);
    }
  }
  pass(`${panels.length} panels, ${nTargets} queries checked; metrics used: ${[...used].sort().join(', ')}`);
  // the families the issue asks the board to show
  for (const want of ['verdict_items', 'verdict_transitions_total', 'verdict_session_outcomes_total',
    'verdict_tool_failures_total', 'verdict_http_request_duration_seconds_bucket', 'verdict_http_requests_total',
    'verdict_db_pool_in_use']) {
    if (!used.has(want)) fail(`no panel shows ${want}`);
  }
  if (!panels.some((p) => (p.targets || []).some((t) => /histogram_quantile\(\s*0\.99\s*,[^]*verdict_http_request_duration_seconds_bucket/.test(t.expr))))
    fail('no p99 latency panel (histogram_quantile(0.99, ... verdict_http_request_duration_seconds_bucket))');

  composeChecks(root, yaml, job, credFile, ds);
}

// ---- alert rules: every rule file prometheus.yml loads, every series they name is scraped ----
function alertChecks(root, yaml, prom, series) {
  const files = prom.rule_files || [];
  if (!files.length) { fail('prometheus.yml: no rule_files (docker/prometheus/alerts.yml)'); return; }
  const names = new Set();
  for (const f of files) {
    const file = path.resolve(root, 'docker/prometheus', f);
    let doc;
    try { doc = yaml.load(fs.readFileSync(file, 'utf8')); } catch (e) { fail(`rule file ${f}: ${e.message}`); continue; }
    for (const g of doc.groups || []) {
      for (const r of g.rules || []) {
        if (!r.alert) continue;
        names.add(r.alert);
        let sels;
        try { sels = analyse(r.expr).selectors; } catch (e) { fail(`alert ${r.alert}: ${e.message}`); continue; }
        const missing = sels.map((x) => x.name).filter((n) => n && !series.has(n));
        if (missing.length) fail(`alert ${r.alert}: names series the scrape does not have: ${missing.join(', ')}`);
        else if (!r.annotations?.summary) fail(`alert ${r.alert}: no summary annotation`);
        else pass(`alert ${r.alert}: ${sels.map((x) => x.name).join(', ')} (for ${r.for || '0s'})`);
      }
    }
  }
  for (const want of ['VerdictDatabaseDown', 'VerdictStuckClaims', 'VerdictBacklogOld', 'VerdictHigh5xxRate'])
    if (!names.has(want)) fail(`alert rules: no ${want}`);
}

// ---- compose --------------------------------------------------------------------------------
function composeChecks(root, yaml, job, credFile, ds) {
  const dockerDir = path.join(root, 'docker');
  let compose;
  try { compose = yaml.load(fs.readFileSync(path.join(dockerDir, 'compose.yaml'), 'utf8')); pass(`compose.yaml parses (${yaml.name})`); }
  catch (e) { fail(`compose.yaml: ${e.message}`); return; }
  const svc = compose.services || {};
  for (const s of ['postgres', 'verdict', 'prometheus', 'grafana']) if (!svc[s]) fail(`compose.yaml: no service ${s}`);
  if (!svc.prometheus || !svc.grafana || !svc.verdict) return;
  if (!/^prom\/prometheus(:|$)/.test(svc.prometheus.image || '')) fail(`compose.yaml: prometheus image ${svc.prometheus.image}`);
  if (!/^grafana\/grafana(:|$)/.test(svc.grafana.image || '')) fail(`compose.yaml: grafana image ${svc.grafana.image}`);

  const defaults = (s) => String(s).replace(/\$\{([A-Za-z0-9_]+)(?::?-([^}]*))?\}/g, (_, n, d) => d ?? '');
  // ${NAME:?message}: a value the operator must give (no default); `required` names it
  const REQUIRED = /\$\{([A-Za-z0-9_]+):?\?[^}]*\}/;
  const mounts = (name) => (svc[name].volumes || []).map((v) => {
    if (typeof v === 'object') return { source: defaults(v.source), target: v.target, ro: !!v.read_only, bind: v.type === 'bind' };
    const req = REQUIRED.exec(String(v));
    const parts = defaults(String(v).replace(REQUIRED, '@REQUIRED@')).split(':');
    if (req) return { source: null, required: req[1], target: parts[1], ro: parts[2] === 'ro', bind: true };
    return { source: parts[0], target: parts[1], ro: parts[2] === 'ro', bind: /^[./~]/.test(parts[0]) };
  });
  // safe defaults: nothing published beyond loopback, and no secret with a default value
  for (const name of Object.keys(svc)) {
    for (const p of svc[name].ports || []) {
      const port = defaults(typeof p === 'object' ? `${p.host_ip || ''}:${p.published}:${p.target}` : p);
      if (!port.startsWith('127.0.0.1:')) fail(`compose.yaml: ${name} publishes ${port} beyond loopback by default`);
      else pass(`compose.yaml: ${name} publishes ${port} (loopback by default)`);
    }
  }
  const secretEnv = { verdict: ['VERDICT_API_KEYS', 'VERDICT_DATABASE_URL'], postgres: ['POSTGRES_PASSWORD'], grafana: ['GF_SECURITY_ADMIN_PASSWORD'] };
  for (const [name, vars] of Object.entries(secretEnv)) {
    for (const v of vars) {
      const val = String(svc[name]?.environment?.[v] ?? '');
      if (!REQUIRED.test(val) || /:-|change-me/.test(val)) fail(`compose.yaml: ${name} ${v} has a default or placeholder secret (${val})`);
      else pass(`compose.yaml: ${name} ${v} is required (${REQUIRED.exec(val)[1]}), no default`);
    }
  }
  const named = new Set(Object.keys(compose.volumes || {}));
  for (const name of Object.keys(svc)) {
    for (const m of mounts(name)) {
      if (m.required) {
        if (!m.ro) fail(`compose.yaml: ${name} mounts \${${m.required}} read-write`);
        else pass(`compose.yaml: ${name} mounts the operator's \${${m.required}} -> ${m.target} (ro, required)`);
        continue;
      }
      if (!m.bind) { if (!named.has(m.source)) fail(`compose.yaml: ${name} mounts volume ${m.source}, not declared under volumes`); continue; }
      const host = path.resolve(dockerDir, m.source);
      if (!fs.existsSync(host)) fail(`compose.yaml: ${name} mounts ${m.source} -> ${m.target}, but ${path.relative(root, host)} does not exist`);
      else if (!m.ro) fail(`compose.yaml: ${name} mounts ${m.source} read-write (provisioning must be :ro)`);
      else pass(`compose.yaml: ${name} mounts ${path.relative(root, host)} -> ${m.target} (ro)`);
    }
  }
  // Prometheus: the config it is started with, and the token file beside it
  const cmd = [].concat(svc.prometheus.command || []).join(' ');
  const cfgArg = /--config\.file=(\S+)/.exec(cmd)?.[1] || '/etc/prometheus/prometheus.yml';
  const promMounts = mounts('prometheus');
  const cfgMount = promMounts.find((m) => m.target === cfgArg);
  if (!cfgMount || path.resolve(dockerDir, cfgMount.source) !== path.join(dockerDir, 'prometheus/prometheus.yml'))
    fail(`compose.yaml: prometheus does not run with docker/prometheus/prometheus.yml as ${cfgArg}`);
  if (credFile) {
    const inContainer = path.posix.resolve(path.posix.dirname(cfgArg), credFile);
    const tokMount = promMounts.find((m) => m.target === inContainer || (inContainer.startsWith(m.target + '/')));
    if (!tokMount) fail(`compose.yaml: nothing is mounted at ${inContainer} (credentials_file of prometheus.yml)`);
    else if (tokMount.required) {
      pass(`compose.yaml: Prometheus' token file ${inContainer} is the operator's \${${tokMount.required}} (no default token)`);
    } else {
      const hostTok = tokMount.target === inContainer ? path.resolve(dockerDir, tokMount.source)
        : path.join(path.resolve(dockerDir, tokMount.source), path.posix.relative(tokMount.target, inContainer));
      const token = fs.existsSync(hostTok) ? fs.readFileSync(hostTok, 'utf8').trim() : null;
      const keys = defaults(svc.verdict.environment?.VERDICT_API_KEYS || '').split(',').map((k) => k.split(':'));
      const key = keys.find((k) => k[2] === token);
      if (!token) fail(`compose.yaml: the default token file ${hostTok} is missing or empty`);
      else if (!key) fail(`compose.yaml: the token in ${path.relative(root, hostTok)} is not one of verdict's default VERDICT_API_KEYS`);
      else pass(`compose.yaml: Prometheus' default token is API key "${key[0]}" (role ${key[1]}) of verdict's defaults`);
    }
  }
  const [host, port] = job.static_configs[0].targets[0].split(':');
  const listen = svc[host]?.environment?.VERDICT_LISTEN;
  if (!svc[host] || !listen || !listen.endsWith(`:${port}`)) fail(`compose.yaml: the scrape target ${host}:${port} is not a service listening there (VERDICT_LISTEN ${listen})`);
  else pass(`compose.yaml: the scrape target ${host}:${port} is service ${host} (VERDICT_LISTEN ${listen})`);
  const dsHost = /^https?:\/\/([^:/]+)/.exec(ds.url)?.[1];
  if (!svc[dsHost]) fail(`the datasource url ${ds.url} names no compose service`);

  // Grafana: the provisioning directory, and the dashboard provider's path holds verdict.json
  const gm = mounts('grafana');
  const prov = gm.find((m) => m.target === '/etc/grafana/provisioning');
  if (!prov) { fail('compose.yaml: grafana has nothing mounted at /etc/grafana/provisioning'); return; }
  const provHost = path.resolve(dockerDir, prov.source);
  for (const f of ['datasources/prometheus.yaml', 'dashboards/verdict.yaml'])
    if (!fs.existsSync(path.join(provHost, f))) fail(`grafana provisioning: ${f} missing under ${prov.source}`);
  const providers = yaml.load(fs.readFileSync(path.join(provHost, 'dashboards/verdict.yaml'), 'utf8')).providers || [];
  for (const p of providers) {
    const dir = p.options?.path, m = gm.find((x) => x.target === dir);
    if (p.type !== 'file' || !m) { fail(`dashboard provider "${p.name}": path ${dir} is not a grafana mount`); continue; }
    const hostDir = path.resolve(dockerDir, m.source);
    if (!fs.existsSync(path.join(hostDir, 'verdict.json'))) fail(`dashboard provider "${p.name}": ${path.relative(root, hostDir)} has no verdict.json`);
    else pass(`dashboard provider "${p.name}": ${dir} = ${path.relative(root, hostDir)} (verdict.json)`);
  }
  const home = svc.grafana.environment?.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH;
  if (home && !gm.some((m) => home.startsWith(m.target + '/') && fs.existsSync(path.join(path.resolve(dockerDir, m.source), path.posix.relative(m.target, home)))))
    fail(`compose.yaml: GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH ${home} is no mounted file`);
}

// ---- a Prometheus config for the test, derived from the real one --------------------------
function promConfig(root, outDir, target, token) {
  const yaml = yamlLoader(root);
  const cfg = yaml.load(fs.readFileSync(path.join(root, 'docker/prometheus/prometheus.yml'), 'utf8'));
  cfg.global = { ...(cfg.global || {}), scrape_interval: '1s', scrape_timeout: '1s' };
  let n = 0;
  for (const job of cfg.scrape_configs || []) {
    delete job.scrape_interval; delete job.scrape_timeout;
    for (const sc of job.static_configs || []) {
      sc.targets = (sc.targets || []).map((t) => (/^verdict:\d+$/.test(t) ? (n++, target) : t));
    }
    // the token file keeps its (relative) name: it is written beside the derived config
    const cf = job.authorization?.credentials_file;
    if (cf) fs.writeFileSync(path.resolve(outDir, cf), `${token}\n`);
  }
  if (n !== 1) throw new Error(`expected one verdict:<port> target, found ${n}`);
  // the rule files keep their relative names too; evaluated every second for the live check
  cfg.global.evaluation_interval = '1s';
  for (const f of cfg.rule_files || [])
    fs.copyFileSync(path.resolve(root, 'docker/prometheus', f), path.resolve(outDir, f));
  fs.writeFileSync(path.join(outDir, 'prometheus.yml'), yaml.dump(cfg));
}

// ---- every panel query on a real Prometheus -------------------------------------------------
async function live(root, promUrl) {
  const { dash } = loadDashboard(root);
  const get = async (p) => {
    const r = await fetch(promUrl + p);
    const body = await r.json();
    if (body.status !== 'success') throw new Error(`${p}: ${body.error || r.status}`);
    return body.data;
  };
  const targets = (await get('/api/v1/targets')).activeTargets;
  const bad = targets.filter((t) => t.health !== 'up');
  if (!targets.length || bad.length) fail(`Prometheus targets: ${JSON.stringify(targets.map((t) => [t.scrapeUrl, t.health, t.lastError]))}`);
  else pass(`Prometheus scrapes ${targets.map((t) => t.scrapeUrl).join(', ')} with the config's bearer token: up`);

  // every alert rule evaluates without error against the real scrape
  let rules = [];
  for (let i = 0; i < 50; i++) {
    rules = (await get('/api/v1/rules')).groups.flatMap((g) => g.rules);
    if (rules.length && rules.every((r) => r.health !== 'unknown')) break;
    await new Promise((res) => setTimeout(res, 200));
  }
  if (!rules.length) fail('live: Prometheus loaded no alert rules');
  for (const r of rules) {
    if (r.health !== 'ok') fail(`live: alert ${r.name}: health ${r.health} ${r.lastError || ''}`);
    else pass(`live: alert ${r.name} evaluates (state ${r.state})`);
  }

  const varNames = templateValues(dash);
  const intervals = { __rate_interval: '30s', __interval: '1s', __range: '10m', __auto: '30s' };
  for (const p of allPanels(dash)) {
    for (const t of p.targets || []) {
      const tw = `live: panel ${p.id} "${p.title}" target ${t.refId}`;
      const q = substitute(t.expr, varNames, intervals);
      let data;
      try { data = await get(`/api/v1/query?query=${encodeURIComponent(q)}`); }
      catch (e) { fail(`${tw}: ${e.message}`); continue; }
      const res = data.resultType === 'vector' ? data.result : [];
      const values = res.map((r) => Number(r.value[1])).filter((v) => !Number.isNaN(v));
      const legend = [...(t.legendFormat || '').matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)].map((m) => m[1]);
      const noLegend = legend.filter((l) => res.some((r) => !r.metric[l]));
      if (!res.length) fail(`${tw}: no series -- ${q}`);
      else if (!values.length) fail(`${tw}: only NaN -- ${q}`);
      else if (noLegend.length) fail(`${tw}: result series lack legend label(s) ${noLegend.join(', ')} -- ${q}`);
      else pass(`${tw}: ${res.length} series, e.g. ${JSON.stringify(res[0].metric)} = ${res[0].value[1]}`);
    }
  }
}

const [cmd, rootArg, ...args] = process.argv.slice(2);
const root = path.resolve(rootArg || '.');
try {
  if (cmd === 'static') staticChecks(root, ...args);
  else if (cmd === 'promcfg') promConfig(root, ...args);
  else if (cmd === 'live') await live(root, ...args);
  else throw new Error(`usage: check.mjs static|promcfg|live ...`);
} catch (e) {
  fail(`${cmd}: ${e.stack || e.message}`);
}
process.exit(failures ? 1 : 0);
