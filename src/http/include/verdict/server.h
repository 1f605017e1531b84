/* server.h - the HTTP server of verdictd (libmicrohttpd): start it on the configured address
 * with the route table of src/http/routes.c, stop it gracefully. */
#ifndef VERDICT_SERVER_H
#define VERDICT_SERVER_H

#include "verdict/config.h"
#include "verdict/store.h"

typedef struct vd_server vd_server;

/* Start serving. Borrows cfg and db for the server's lifetime. Returns NULL (and logs why)
 * when the address cannot be bound. */
vd_server *vd_server_start(const vd_config *cfg, vd_db *db);
/* Stop accepting, finish in-flight requests, close connections, free the server. */
void vd_server_stop(vd_server *srv);

#endif
