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
    BD_EV_STOPPED      /* the scheduler stopped it (after a measurement) */
} bd_event_type;

#endif
