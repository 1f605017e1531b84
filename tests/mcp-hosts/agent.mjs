// tests/mcp-hosts/agent.mjs KIND TOOL [ARGS-JSON] - one agent process for one claim, connected to
// verdict the way an MCP host would be configured by the config files next to this script:
//   http     .mcp.json (Claude Code's format): the url and headers with ${VAR} and
//            ${VAR:-default} expanded from the environment, as Claude Code expands them; the
//            official SDK's Streamable HTTP client connects with them
//   desktop  claude_desktop_config.json: the command and args run as a desktop host runs
//            them (stdio), i.e. the mcp-remote bridge, with the config's env (filled in here
//            with this claim's values: a desktop host does not expand variables itself)
// The agent lists the tools, reads verdict://job (the claimed item), and calls TOOL with ARGS.
// Environment: VERDICT_URL, VERDICT_WORKER_KEY, VERDICT_JOB_ID, VERDICT_CLAIM_TOKEN.
// Prints one JSON line: {tools, item_identifier, text, isError}. Exits 1 on a refusal.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const [kind, tool, argsJson] = process.argv.slice(2);
const env = process.env;
// Claude Code's expansion in .mcp.json: ${VAR} and ${VAR:-default}; an unset VAR without a default is an error
const expand = (s) => s.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name, dflt) => {
  if (env[name] !== undefined && env[name] !== '') return env[name];
  if (dflt !== undefined) return dflt;
  throw new Error(`.mcp.json: ${name} is not set`);
});

let transport;
if (kind === 'http') {
  const server = JSON.parse(readFileSync(path.join(HERE, '.mcp.json'), 'utf8')).mcpServers.verdict;
  const headers = Object.fromEntries(Object.entries(server.headers).map(([k, v]) => [k, expand(v)]));
  transport = new StreamableHTTPClientTransport(new URL(expand(server.url)), { requestInit: { headers } });
} else if (kind === 'desktop') {
  const server = JSON.parse(readFileSync(path.join(HERE, 'claude_desktop_config.json'), 'utf8')).mcpServers.verdict;
  // what the user fills in for this claim: the server's URL and the two values
  const args = server.args.map((a) => a.replace('http://127.0.0.1:8080', env.VERDICT_URL));
  const filled = { VERDICT_AUTH: `Bearer ${env.VERDICT_WORKER_KEY}`, VERDICT_CLAIM: `${env.VERDICT_JOB_ID}:${env.VERDICT_CLAIM_TOKEN}` };
  transport = new StdioClientTransport({ command: server.command, args, cwd: HERE, stderr: 'pipe',
    env: { PATH: env.PATH, HOME: env.HOME, npm_config_cache: env.npm_config_cache || '', ...filled } });
} else {
  console.error('usage: node agent.mjs http|desktop TOOL [ARGS-JSON]');
  process.exit(2);
}
let stderr = '';
const client = new Client({ name: `verdict-test-agent-${kind}`, version: '1.0.0' });
try {
  await client.connect(transport);
  if (transport.stderr) transport.stderr.on('data', (d) => { stderr += d; });
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  const job = JSON.parse((await client.readResource({ uri: 'verdict://job' })).contents[0].text);
  const r = await client.callTool({ name: tool, arguments: argsJson ? JSON.parse(argsJson) : {} });
  console.log(JSON.stringify({ tools, item_identifier: job.item.item_identifier, text: r.content[0].text, isError: !!r.isError }));
  await client.close();
  process.exit(r.isError ? 1 : 0);
} catch (e) {
  console.error(`agent ${kind}: ${e.message}\n${stderr}`);
  process.exit(1);
}
