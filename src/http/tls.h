/* tls.h - optional HTTPS for verdictd's listener (VERDICT_TLS_CERT_FILE / _KEY_FILE) through
 * libmicrohttpd's GnuTLS support: what vd_server_start adds to its flags and options.
 * Only src/http/ includes this. */
#ifndef VERDICT_HTTP_TLS_H
#define VERDICT_HTTP_TLS_H

#include <microhttpd.h>
#include <stdbool.h>

#include "verdict/config.h"

typedef struct vd_tls {
    char *cert; /* PEM text, kept for the daemon's life */
    char *key;
    unsigned flags;                   /* MHD_USE_TLS, or 0 */
    struct MHD_OptionItem options[4]; /* for MHD_OPTION_ARRAY; ends with MHD_OPTION_END */
} vd_tls;

/* What the listener offers unless VERDICT_TLS_PRIORITY says otherwise: TLS 1.3 and 1.2 only;
 * in 1.2 only ECDHE/DHE key exchange (forward secrecy: no static RSA) and AEAD ciphers (GCM,
 * ChaCha20-Poly1305: no CBC, no SHA-1 MAC); groups, signatures and the rest as GnuTLS's
 * SECURE level. */
#define VD_TLS_DEFAULT_PRIORITY                                                                    \
    "SECURE:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:"            \
    "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:%SERVER_"          \
    "PRECEDENCE"

/* The priority string in force: VERDICT_TLS_PRIORITY, or the default above. */
const char *vd_tls_priority(const vd_config *cfg);
/* Read cfg's certificate and key (none configured: plain HTTP, flags 0, no options), and warn
 * when API keys would travel in clear on a non-loopback address. Returns false, logged and
 * with nothing to clean up, when a file cannot be read or libmicrohttpd lacks TLS. */
bool vd_tls_load(const vd_config *cfg, vd_tls *out);
/* Free what vd_tls_load read; safe on a zeroed struct. */
void vd_tls_cleanup(vd_tls *t);

#endif
