#!/usr/bin/env python3
"""Generate tests/corpus/failures.tsv: tool-failure texts labelled with their true template.

The lines are SYNTHETIC: each template below is written after a real error text of the named
software (WordPress REST and PHP, HTTP client libraries, model providers, shells, databases,
verdict's own tools, and messages in other languages and runtimes the miner was not designed
for); the variable parts are drawn at random from pools of realistic values (slugs, file names,
paths, URLs, ids, durations, hashes, hosts, numbers). A fixed seed makes the file reproducible:
    python3 tests/corpus/generate.py > tests/corpus/failures.tsv
Columns: source, template label, message (no tabs or newlines inside).
"""
import random
import string

R = random.Random(29)
WORDS = ("alpha apple archive banner beta blog board cache calendar campaign carbon catalog "
         "cloud comment contact cookie course dashboard delta draft editor event feature "
         "feed footer forum gallery garden header history invoice journal kernel landing "
         "ledger library market media member menu meta mirror network news notes orbit "
         "order package page partner photo pixel planet podcast portal post press pricing "
         "product profile project quarry query recipe release report review river sales "
         "search season service sitemap slider source sport staff story studio summer "
         "summit support survey team theme ticket timeline topic tour travel update upload "
         "user vendor video village widget winter workshop").split()
TLDS = ["com", "org", "net", "io", "de", "fr"]
CMDS = ["jq", "pandoc", "rg", "convert", "wp", "node", "python", "yq", "ffmpeg", "gs"]
MODELS = ["gpt-4o-mini", "gpt-4.1", "o3-mini", "claude-3-5-haiku-20241022",
          "claude-sonnet-4-20250514", "gemini-1.5-pro", "mistral-large-2411"]


def word():
    return R.choice(WORDS)


def slug():
    return "-".join(R.choice(WORDS) for _ in range(R.randint(1, 4)))


def ident():
    return "_".join(R.choice(WORDS) for _ in range(R.randint(1, 3)))


def num(lo=1, hi=99999):
    return str(R.randint(lo, hi))


def hexs(n):
    return "".join(R.choice("0123456789abcdef") for _ in range(n))


def host():
    return R.choice(["", "api.", "www.", "cdn."]) + word() + "." + R.choice(TLDS)


def ip():
    return ".".join(str(R.randint(1, 254)) for _ in range(4))


def path():
    return "/" + "/".join([R.choice(["var/www/html", "srv/wiki", "home/deploy", "tmp", "opt/app"]),
                           word(), slug() + R.choice([".php", ".md", ".json", ".html"])])


def url():
    return "https://" + host() + "/" + word() + "/" + R.choice([num(), slug()])


def dur():
    return R.choice([num(1, 900) + "ms", str(R.randint(1, 59)) + "." + num(0, 9) + "s",
                     num(1, 120) + "s"])


def fname():
    return slug() + R.choice([".pdf", ".txt", ".md", ".csv", ".jpg"])


def uuid():
    return "-".join(hexs(k) for k in (8, 4, 4, 4, 12))


def key():
    return "sk-" + "".join(R.choice(string.ascii_letters + string.digits) for _ in range(8)) + \
        "*" * 10 + hexs(4)


POOLS = {
    "word": word, "slug": slug, "ident": ident, "n": num, "host": host, "ip": ip,
    "path": path, "url": url, "dur": dur, "file": fname, "uuid": uuid, "key": key,
    "hash7": lambda: hexs(7), "req": lambda: "req_" + hexs(6), "port": lambda: num(1024, 65535),
    "model": lambda: R.choice(MODELS), "cmd": lambda: R.choice(CMDS),
    "s4xx": lambda: R.choice(["401", "403"]), "s5xx": lambda: R.choice(["502", "503", "504"]),
    "line": lambda: num(1, 2000), "table": lambda: "wp_" + R.choice(WORDS),
    "col": lambda: R.choice(["post_title", "post_name", "guid", "slug", "email", "user_login"]),
    "type": lambda: R.choice(["null", "bool", "int"]),
    "field": lambda: R.choice(["title", "status", "categories", "author", "date"]),
}

T = {}
T["wordpress"] = {
    "wp_invalid_id": '{"code":"rest_post_invalid_id","message":"Invalid post ID.","data":{"status":404}}',
    "wp_forbidden": '{"code":"rest_forbidden","message":"Sorry, you are not allowed to do that.","data":{"status":{s4xx}}}',
    "wp_cannot_edit": '{"code":"rest_cannot_edit","message":"Sorry, you are not allowed to edit this post.","data":{"status":403}}',
    "wp_no_route": '{"code":"rest_no_route","message":"No route was found matching the URL and request method.","data":{"status":404}}',
    "wp_term_invalid": '{"code":"rest_term_invalid","message":"Term does not exist.","data":{"status":404}}',
    "wp_invalid_param": '{"code":"rest_invalid_param","message":"Invalid parameter(s): {field}","data":{"status":400,"params":{"{field}":"{field} is not of type string."}}}',
    "wp_upload_error": '{"code":"rest_upload_unknown_error","message":"Sorry, you are not allowed to upload {file}.","data":{"status":500}}',
    "php_undefined_function": "PHP Fatal error:  Uncaught Error: Call to undefined function {ident}() in {path}:{line}",
    "php_array_key": 'PHP Warning:  Undefined array key "{ident}" in {path} on line {line}',
    "php_headers_sent": "PHP Warning:  Cannot modify header information - headers already sent by (output started at {path}:{line}) in {path} on line {line}",
    "php_offset": "PHP Notice:  Trying to access array offset on value of type {type} in {path} on line {line}",
    "php_memory": "PHP Fatal error:  Allowed memory size of {n} bytes exhausted (tried to allocate {n} bytes) in {path} on line {line}",
    "wp_db_duplicate": "WordPress database error Duplicate entry '{n}-{slug}' for key '{col}' for query INSERT INTO `{table}` made by wp_insert_post",
    "wp_slug_taken": "Post slug {slug} is already in use",
}
T["http_clients"] = {
    "py_max_retries": "HTTPSConnectionPool(host='{host}', port=443): Max retries exceeded with url: /{word}/{n} (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f{hash7}>: Failed to establish a new connection: [Errno 111] Connection refused'))",
    "py_read_timeout": "HTTPSConnectionPool(host='{host}', port=443): Read timed out. (read timeout={n})",
    "py_404": "404 Client Error: Not Found for url: {url}",
    "py_500": "500 Server Error: Internal Server Error for url: {url}",
    "node_econnrefused": "Error: connect ECONNREFUSED {ip}:{port}",
    "node_enotfound": "Error: getaddrinfo ENOTFOUND {host}",
    "axios_status": "AxiosError: Request failed with status code {s5xx}",
    "node_hangup": "FetchError: request to {url} failed, reason: socket hang up",
    "curl_timeout": "curl: (28) Operation timed out after {n} milliseconds with {n} out of {n} bytes received",
    "curl_resolve": "curl: (6) Could not resolve host: {host}",
    "curl_connect": "curl: (7) Failed to connect to {host} port {port} after {n} ms: Connection refused",
    "curl_http": "curl: (22) The requested URL returned error: {s4xx}",
    "go_deadline": 'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
    "go_dial": "dial tcp {ip}:{port}: connect: connection refused",
}
T["providers"] = {
    "oai_rate": '{"error":{"message":"Rate limit reached for {model} in organization org-{hash7} on tokens per min (TPM): Limit {n}, Used {n}, Requested {n}. Please try again in {dur}.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}',
    "oai_context": '{"error":{"message":"This model\'s maximum context length is {n} tokens. However, your messages resulted in {n} tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}',
    "oai_key": '{"error":{"message":"Incorrect API key provided: {key}. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}',
    "ant_overloaded": '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "ant_invalid": '{"type":"error","error":{"type":"invalid_request_error","message":"messages.{n}.content: Input should be a valid list"}}',
    "ant_rate": '{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit; see the response headers for current usage."}}',
    "gem_exhausted": '{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}',
    "gem_key": '{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}',
    "oai_timeout": "openai.APITimeoutError: Request timed out after {dur}",
    "model_missing": "The model `{model}` does not exist or you do not have access to it.",
    "refusal": "The model refused to answer: content policy violation ({req})",
    "stream_cut": "stream ended unexpectedly after {n} tokens (request id {req})",
}
T["shells"] = {
    "bash_not_found": "bash: {cmd}: command not found",
    "sh_not_found": "sh: 1: {cmd}: not found",
    "ls_missing": "ls: cannot access '{path}': No such file or directory",
    "rm_denied": "rm: cannot remove '{path}': Permission denied",
    "unbound": "{path}: line {line}: {ident}: unbound variable",
    "timeout_kill": "timeout: sending signal TERM to command '{cmd}'",
    "git_pathspec": "error: pathspec '{slug}' did not match any file(s) known to git",
    "git_resolve": "fatal: unable to access '{url}/': Could not resolve host: {host}",
    "git_ref": "fatal: bad revision '{hash7}'",
    "exit_status": "process exited with status {n} after {dur}",
    "segv": "Segmentation fault (core dumped) in {cmd} pid {n}",
}
T["databases"] = {
    "pg_unique": 'ERROR:  duplicate key value violates unique constraint "{table}_{col}_key"',
    "pg_relation": 'ERROR:  relation "{table}" does not exist',
    "pg_column": 'ERROR:  column "{col}" of relation "{table}" does not exist',
    "pg_stmt_timeout": "ERROR:  canceling statement due to statement timeout",
    "pg_deadlock": "ERROR:  deadlock detected DETAIL:  Process {n} waits for ShareLock on transaction {n}; blocked by process {n}.",
    "pg_serialize": "ERROR:  could not serialize access due to concurrent update",
    "pg_slots": "FATAL:  remaining connection slots are reserved for non-replication superuser connections",
    "pg_too_long": "ERROR:  value too long for type character varying({n})",
    "pg_syntax": 'ERROR:  invalid input syntax for type integer: "{word}"',
    "my_duplicate": "ERROR 1062 (23000): Duplicate entry '{n}' for key '{col}'",
    "my_table": "ERROR 1146 (42S02): Table 'wordpress.{table}' doesn't exist",
    "my_lost": "ERROR 2013 (HY000): Lost connection to MySQL server during query",
    "my_lock": "ERROR 1205 (HY000): Lock wait timeout exceeded; try restarting transaction",
    "lite_locked": "sqlite3.OperationalError: database is locked",
    "lite_table": "sqlite3.OperationalError: no such table: {table}",
    "redis_oom": "OOM command not allowed when used memory > 'maxmemory'.",
}
T["verdict_tools"] = {
    "target_path": "target_path '{path}' must stay inside root",
    "iteration_cap": "skills__tldr: iteration_cap reached after {n} iterations",
    "search_5xx": "search provider returned HTTP {s5xx} after {dur}",
    "fetch_status": "fetch_source: {url} answered {s4xx}",
    "embed_long": "embedding input too long ({n} tokens > {n})",
    "publish_exists": "publish: slug {slug} already exists",
    "output_token": "tool_result: output token missing in {n} bytes of output",
    "wiki_lock": "wiki_upsert: page {slug} is locked by {ident} since {dur}",
    "schema_field": "wiki_upsert: schema validation failed: field {field} is required",
    "job_640": "Job {n} contract violation: result has no output token ({req})",
}
T["other_languages"] = {
    "de_file": "Die Datei „{file}“ konnte nicht gefunden werden",
    "de_timeout": "Zeitüberschreitung der Verbindung zu {host} nach {n} Sekunden",
    "fr_open": "Impossible d'ouvrir le fichier « {file} » : permission refusée",
    "fr_timeout": "Le délai d'attente de la requête a expiré après {n} secondes",
    "es_connect": "No se pudo conectar con el servidor {host}: tiempo de espera agotado",
    "es_param": "El parámetro '{field}' es obligatorio",
    "ru_page": "Не удалось найти страницу {slug}",
    "ru_timeout": "Превышено время ожидания ответа от {host}",
    "ja_file": "ファイル「{file}」が見つかりません",
    "ja_timeout": "サーバー {host} への接続がタイムアウトしました",
    "zh_db": "无法连接到数据库 {host}:{port}",
    "zh_file": "文件 {path} 不存在",
    "java_timeout": "java.net.SocketTimeoutException: Read timed out after {n} ms",
    "java_npe": 'java.lang.NullPointerException: Cannot invoke "String.length()" because "{ident}" is null',
    "rust_panic": "thread 'main' panicked at src/{word}.rs:{line}:{n}: called `Option::unwrap()` on a `None` value",
    "py_keyerror": "KeyError: '{ident}'",
    "py_valueerror": "ValueError: invalid literal for int() with base 10: '{word}'",
    "py_json": "json.decoder.JSONDecodeError: Expecting value: line {n} column {n} (char {n})",
}


def fill(template):
    out, i = [], 0
    while i < len(template):
        if template[i] == "{":
            j = template.find("}", i)
            name = template[i + 1:j] if j > 0 else ""
            if name in POOLS:
                out.append(POOLS[name]())
                i = j + 1
                continue
        out.append(template[i])
        i += 1
    return "".join(out)


def main():
    for source, templates in T.items():
        lines = []
        for label, template in templates.items():
            for _ in range(R.choice([8, 12, 16, 20, 24, 30, 40])):
                lines.append(f"{source}\t{label}\t{fill(template)}")
        R.shuffle(lines)  # interleaved, as failures arrive
        print("\n".join(lines))


if __name__ == "__main__":
    main()
