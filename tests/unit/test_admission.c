/* Study gates and per-user slots (server/admission.c): who may wait for a
 * study, and when a request is refused with BD_EBUSY instead. Times are
 * given explicitly, so nothing here sleeps. */
#include <criterion/criterion.h>

#include "server/admission.h"

static bd_user_slots slots;

static void setup(void)
{
    bd_user_slots_init(&slots, 2, 8);
}

static void teardown(void)
{
    bd_user_slots_destroy(&slots);
}

TestSuite(admission, .init = setup, .fini = teardown);

/* One request enters, holds the study for hold seconds from t, and leaves. */
static void one_request(bd_gate *g, int64_t user, double t, double hold)
{
    bd_gate_ticket ticket;
    bd_err err;
    cr_assert_eq(bd_gate_enter(g, &slots, user, t, &ticket, &err), 0);
    bd_gate_locked(g, &ticket, t);
    bd_gate_leave(g, &slots, t + hold);
}

Test(admission, an_idle_study_admits_even_when_slow)
{
    bd_gate g = {0};
    one_request(&g, 1, 100, 5.0); /* 5 s per request from now on */
    bd_gate_ticket t;
    bd_err err;
    cr_expect_eq(bd_gate_enter(&g, &slots, 1, 200, &t, &err), 0, "nobody ahead: never refused");
    bd_gate_cancel(&g, &slots, &t);
    cr_expect_eq(atomic_load(&g.queued), 0);
}

Test(admission, a_slow_study_refuses_a_second_waiter_with_retry_after)
{
    bd_gate g = {0};
    one_request(&g, 1, 100, 2.0);
    bd_gate_ticket holder, waiter;
    bd_err err;
    cr_assert_eq(bd_gate_enter(&g, &slots, 1, 200, &holder, &err), 0);
    bd_gate_locked(&g, &holder, 200);
    /* one ahead at ~2 s: the expected wait passes the 1 s budget */
    cr_expect_eq(bd_gate_enter(&g, &slots, 1, 200.1, &waiter, &err), BD_EBUSY);
    cr_expect_str_eq(err.field, "study");
    cr_expect_eq(err.retry_after, 2);
    cr_expect_eq(atomic_load(&g.queued), 1, "a refused request leaves no trace");
    bd_gate_leave(&g, &slots, 202);
    cr_expect_eq(atomic_load(&g.queued), 0);
}

Test(admission, a_fast_study_lets_many_wait)
{
    bd_gate g = {0};
    one_request(&g, 1, 100, 0.0001);
    bd_gate_ticket t[BD_GATE_QUEUE_MAX];
    bd_err err;
    for (int i = 0; i < BD_GATE_QUEUE_MAX; i++)
        cr_assert_eq(bd_gate_enter(&g, &slots, 1, 200, &t[i], &err), 0, "request %d", i);
    bd_gate_ticket extra;
    cr_expect_eq(bd_gate_enter(&g, &slots, 1, 200, &extra, &err), BD_EBUSY, "the line has a hard length");
    for (int i = 0; i < BD_GATE_QUEUE_MAX; i++)
        bd_gate_cancel(&g, &slots, &t[i]);
    cr_expect_eq(atomic_load(&g.queued), 0);
}

Test(admission, a_long_hold_counts_before_it_ends)
{
    /* The smoothed figure says fast, but the holder has held it 3 s now: a
     * study that just became slow (a model grew) refuses waiters at once. */
    bd_gate g = {0};
    one_request(&g, 1, 100, 0.0001);
    bd_gate_ticket holder, waiter;
    bd_err err;
    cr_assert_eq(bd_gate_enter(&g, &slots, 1, 200, &holder, &err), 0);
    bd_gate_locked(&g, &holder, 200);
    cr_expect_eq(bd_gate_enter(&g, &slots, 2, 203, &waiter, &err), BD_EBUSY);
    cr_expect_eq(err.retry_after, 3);
    bd_gate_leave(&g, &slots, 203.5);
}

Test(admission, costly_studies_take_user_slots_up_to_the_limit)
{
    bd_gate a = {0}, b = {0}, c = {0}, cheap = {0};
    one_request(&a, 7, 1, 0.5);
    one_request(&b, 7, 1, 0.5);
    one_request(&c, 7, 1, 0.5);
    one_request(&cheap, 7, 1, 0.001);
    bd_gate_ticket ta, tb, tc, tcheap, tother;
    bd_err err;
    cr_assert_eq(bd_gate_enter(&a, &slots, 7, 10, &ta, &err), 0);
    cr_assert_eq(bd_gate_enter(&b, &slots, 7, 10, &tb, &err), 0);
    cr_expect_eq(bd_user_slots_count(&slots, 7), 2);
    cr_expect_eq(bd_gate_enter(&c, &slots, 7, 10, &tc, &err), BD_EBUSY, "user 7 holds its 2 slots");
    cr_expect_str_eq(err.field, "user");
    cr_expect_eq(bd_gate_enter(&c, &slots, 8, 10, &tother, &err), 0, "another user is not held back");
    cr_expect_eq(bd_gate_enter(&cheap, &slots, 7, 10, &tcheap, &err), 0, "a cheap study takes no slot");
    bd_gate_cancel(&cheap, &slots, &tcheap);
    bd_gate_cancel(&c, &slots, &tother);
    bd_gate_locked(&a, &ta, 10);
    bd_gate_leave(&a, &slots, 10.5);
    cr_expect_eq(bd_user_slots_count(&slots, 7), 1, "leaving gives the holder's slot back");
    bd_gate_cancel(&b, &slots, &tb);
    cr_expect_eq(bd_user_slots_count(&slots, 7), 0);
    cr_expect_eq(bd_user_slots_count(&slots, 8), 0);
}

Test(admission, the_smoothed_hold_follows_a_study_that_gets_faster)
{
    bd_gate g = {0};
    one_request(&g, 1, 1, 2.0);
    for (int i = 0; i < 30; i++)
        one_request(&g, 1, 10 + i, 0.001);
    cr_expect_lt(atomic_load(&g.hold_ewma), 0.01);
}

Test(admission, retry_after_is_bounded)
{
    bd_gate g = {0};
    one_request(&g, 1, 1, 1e9); /* absurd hold times never ask for more than a minute */
    bd_gate_ticket holder, waiter;
    bd_err err;
    cr_assert_eq(bd_gate_enter(&g, &slots, 2, 2e9, &holder, &err), 0);
    bd_gate_locked(&g, &holder, 2e9);
    cr_expect_eq(bd_gate_enter(&g, &slots, 2, 2e9, &waiter, &err), BD_EBUSY);
    cr_expect_eq(err.retry_after, BD_GATE_RETRY_MAX);
    bd_gate_leave(&g, &slots, 2e9 + 1);
}

Test(admission, the_slot_table_full_of_other_users_refuses_rather_than_overflows)
{
    for (int64_t u = 1; u <= 8; u++)
        cr_assert(bd_user_slots_take(&slots, u));
    cr_expect_not(bd_user_slots_take(&slots, 9));
    for (int64_t u = 1; u <= 8; u++)
        bd_user_slots_give(&slots, u);
    cr_expect(bd_user_slots_take(&slots, 9));
    bd_user_slots_give(&slots, 9);
}

/* What decides whether a request may run on the HTTP polling thread
 * (engine_registry.c, bd_engine_lock_study_now): the recent peak hold,
 * not the smoothed one, so one slow fit among fast reads keeps a study off
 * that thread for a while. */
Test(admission, quick_needs_a_known_short_peak_and_nobody_ahead)
{
    bd_gate g = {0};
    cr_expect_not(bd_gate_quick(&g, 0.001), "a study that never served a request is not known to be quick");
    one_request(&g, 1, 10, 0.0001);
    cr_expect(bd_gate_quick(&g, 0.001));
    bd_gate_ticket t;
    bd_err err;
    cr_assert_eq(bd_gate_enter(&g, &slots, 1, 11, &t, &err), 0);
    cr_expect_not(bd_gate_quick(&g, 0.001), "someone holds or waits for it");
    bd_gate_cancel(&g, &slots, &t);
    one_request(&g, 1, 12, 0.02); /* one 20 ms fit */
    int fast = 0;
    while (!bd_gate_quick(&g, 0.001) && fast < 1000) {
        one_request(&g, 1, 13 + fast, 0.0001);
        fast++;
    }
    /* 0.02 * 0.99^n < 0.001 from n = 299 on; the smoothed hold would have
     * let it back after a few dozen. */
    cr_expect_eq(fast, 299, "back on the quick path after %d fast requests", fast);
}
