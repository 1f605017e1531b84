<?php

/**
 * tests/lint/parse.php FILE... - scripts/check.sh's `php` check: parse every file given with
 * PHP's own parser (token_get_all with TOKEN_PARSE) in one process, as `php -l` does one
 * process per file; print each syntax error as FILE:LINE: message and exit 1 if any.
 */

$bad = 0;
foreach (array_slice($argv, 1) as $file) {
    try {
        token_get_all((string) file_get_contents($file), TOKEN_PARSE);
    } catch (ParseError $e) {
        fwrite(STDOUT, sprintf("%s:%d: %s\n", $file, $e->getLine(), $e->getMessage()));
        $bad++;
    }
}
exit($bad === 0 ? 0 : 1);
