/* tls.c - loads the optional TLS certificate and key for the listener (tls.h) into the
 * memory options libmicrohttpd takes (MHD_OPTION_HTTPS_MEM_CERT/KEY, with MHD_USE_TLS:
 * Debian's libmicrohttpd is built with GnuTLS). Without them verdictd serves plain HTTP and,
 * off loopback, says at start that bearer tokens then travel in clear. The protocol versions
 * and suites offered are GnuTLS's priority string VD_TLS_DEFAULT_PRIORITY (TLS 1.2 and 1.3,
 * forward-secret key exchange, AEAD ciphers only) or VERDICT_TLS_PRIORITY. */
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/util.h"

#define MAX_PEM (1024 * 1024)

/* The whole file at path as a NUL-terminated string (malloc'd), or NULL (logged). */
static char *read_pem(const char *var, const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    if (!f) {
        vd_logf(VD_LOG_ERROR, "%s: cannot read '%s': %s", var, path, strerror(errno));
        return NULL;
    }
    buf = malloc(MAX_PEM + 1);
    if (buf)
        n = fread(buf, 1, MAX_PEM + 1, f);
    fclose(f);
    if (buf && n > 0 && n <= MAX_PEM) {
        buf[n] = '\0';
        if (strstr(buf, "-----BEGIN"))
            return buf;
    }
    vd_logf(VD_LOG_ERROR, "%s: '%s' is not a PEM file of at most 1 MiB", var, path);
    free(buf);
    return NULL;
}

const char *vd_tls_priority(const vd_config *cfg)
{
    return cfg->tls_priority ? cfg->tls_priority : VD_TLS_DEFAULT_PRIORITY;
}

bool vd_tls_load(const vd_config *cfg, vd_tls *out)
{
    memset(out, 0, sizeof(*out));
    out->options[0].option = MHD_OPTION_END;
    if (!cfg->tls_cert_file) {
        if (!cfg->listen_loopback && cfg->api_key_count > 0)
            vd_logf(VD_LOG_WARN,
                    "VERDICT_LISTEN %s is not a loopback address and TLS is off: API keys "
                    "travel in clear. Set VERDICT_TLS_CERT_FILE and VERDICT_TLS_KEY_FILE, or "
                    "serve through a TLS reverse proxy (README, 'TLS')",
                    cfg->listen_host);
        return true;
    }
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        vd_logf(VD_LOG_ERROR, "VERDICT_TLS_CERT_FILE: this libmicrohttpd was built without TLS");
        return false;
    }
    out->cert = read_pem("VERDICT_TLS_CERT_FILE", cfg->tls_cert_file);
    out->key = out->cert ? read_pem("VERDICT_TLS_KEY_FILE", cfg->tls_key_file) : NULL;
    if (!out->key) {
        vd_tls_cleanup(out);
        return false;
    }
    out->flags = MHD_USE_TLS;
    out->options[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, out->cert};
    out->options[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, out->key};
    out->options[2] =
        (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)vd_tls_priority(cfg)};
    out->options[3] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    vd_logf(VD_LOG_INFO, "TLS priorities: %s", vd_tls_priority(cfg));
    return true;
}

void vd_tls_cleanup(vd_tls *t)
{
    if (t->key) /* the private key does not linger in freed memory */
        memset(t->key, 0, strlen(t->key));
    free(t->cert);
    free(t->key);
    memset(t, 0, sizeof(*t));
    t->options[0].option = MHD_OPTION_END;
}
