/* engine_cluster.h: what the HTTP layer asks of cluster mode (several
 * daemons on one PostgreSQL database; server/README.md "Several daemons").
 * A study operation on a study a live peer holds fails with BD_EFORWARD
 * before it has done anything; the HTTP layer then sends the request to
 * that peer (api/forward.h). Implemented in engine_registry.c. */
#ifndef BD_ENGINE_CLUSTER_H
#define BD_ENGINE_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "engine_types.h"

/* 1 in cluster mode. */
int bd_engine_cluster(bd_engine *e);
/* This daemon's id among the members (0 outside cluster mode). */
int64_t bd_engine_daemon_id(bd_engine *e);
/* The peer named by this thread's latest BD_EFORWARD: its daemon id and
 * advertised URL (copied into url, n bytes). 0, or -1 when this thread has
 * had none. */
int bd_engine_forward_target(int64_t *daemon_id, char *url, size_t n);
/* A forward to daemon_id found nobody there (no connection, or another
 * daemon at its address): for a few seconds its leases are taken from it
 * instead of waited out (its writes are fenced either way). */
void bd_engine_peer_gone(bd_engine *e, int64_t daemon_id);
/* The peer of this thread's latest BD_EFORWARD no longer holds the study
 * (it answered 421 "study"): the next claim looks the holder up again. */
void bd_engine_forward_stale(bd_engine *e);
/* The same for study_id. */
void bd_engine_forget_holder(bd_engine *e, int64_t study_id);

#endif
