/* event_type.h: the kinds of event in a study's log, defined once for the
 * storage layer (which stores them by name) and the schedulers (which
 * observe them). */
#ifndef BD_EVENT_TYPE_H
#define BD_EVENT_TYPE_H

typedef enum {
    BD_EV_CREATED = 0, /* a trial was handed out */
    BD_EV_MEASUREMENT, /* an intermediate metric */
    BD_EV_COMPLETED,   /* final value (or timeout) */
    BD_EV_FAILED,      /* the worker gave up */
    BD_EV_EXPIRED,     /* the lease ran out */
    BD_EV_STOPPED,     /* the scheduler stopped it (after a measurement) */
    /* A result known before the study asked for it: a warm-start trial added
     * with its value (POST /v1/studies/{id}/trials). Never stored under this
     * type: such a trial is stored as created + completed, and the engine
     * hands schedulers that learn from it (bd_sched_ops.learns_from_prior)
     * this one event instead of the pair; others never see the trial. */
    BD_EV_PRIOR
} bd_event_type;

#endif
