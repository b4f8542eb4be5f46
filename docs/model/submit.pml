/*
 * payoutd's submit protocol, as the code does it: one disbursement from
 * the claim of its first submit to its final status, and the return of a
 * paid one. docs/model.md says what is modelled and what is abstracted
 * away, states each property and each guard variant, and names the
 * function each part stands for; model_test.go runs the checks.
 *
 * Guard variants (each removes one guard; model_test.go names the
 * property each must break):
 *   -DNO_ASK              resolveAttempted resubmits after the lease
 *                         without asking the vendor first
 *   -DNO_LEASE            it asks, but resubmits a reference the vendor
 *                         does not know without waiting out the lease
 *   -DLEASE_AFTER_QUERY   it reads the clock for the lease after the
 *                         vendor answered, not before it asked
 *   -DNO_SWEEP            the sweep leaves a VERIFIED row whose submit
 *                         was attempted: a lost answer is never resolved
 *   -DNO_CLAIM_GUARD      the claim does not check the attempts it read
 *   -DCLAIM_COUNT_ONLY    it checks their count, not the latest one's
 *                         claim time: a given-back attempt claimed again
 *                         passes for the one read
 *   -DNO_ATTEMPT_GUARD    the expiry does not check the attempts it read
 *   -DEXPIRY_COUNT_ONLY   it checks their count, not the latest one's
 *                         claim time (the code before)
 *   -DUNGUARDED_REJECTION a rejection's FAILED is written whichever
 *                         attempt is the latest
 *   -DNO_DEADLINE         no submit's answer is cut at its lease: its
 *                         writes (and the give-back of a refused call)
 *                         land whenever they come
 *   -DNO_RESUBMIT_DEADLINE  only a resubmit's answer is not (the code
 *                         before: a resubmit ran under its task's timeout)
 *   -DUNGUARDED_MOVE      a move does not check the status it read
 *   -DUNGUARDED_RETURN    only the return (SUCCESS -> RETURNED) does not
 *   -DTRUST_CALLBACK      a callback's status is applied without the query
 * CLAIM_COUNT_ONLY, EXPIRY_COUNT_ONLY, UNGUARDED_REJECTION, NO_DEADLINE
 * and NO_RESUBMIT_DEADLINE need two faults (-DMAXFAULT=2) to break a
 * property. The deadline keeps on its own what the attempts' time and the
 * rejection's guard keep: CLAIM_COUNT_ONLY and EXPIRY_COUNT_ONLY break one
 * only with NO_DEADLINE, UNGUARDED_REJECTION only with
 * NO_RESUBMIT_DEADLINE; neither deadline variant breaks any alone
 * (docs/model.md, "Two faults").
 * Vendors:
 *   -DVENDOR_DEDUP        the vendor answers a reference it knows with its
 *                         status instead of taking another transfer
 *   -DCONTRA              the vendor may pay once after it reported FAILED
 */

/* Faults in a run, all from one budget: a request or an answer lost on
 * the network, a submitter that crashes or stalls past its lease, a
 * claimed call refused before it left. */
#ifndef MAXFAULT
#define MAXFAULT 1
#endif

/* Amounts in units: the fee is taken out of the gross, the vendor
 * transfers the net. OTHER is the lock of the wallet's other open
 * payouts: the ledger guards a release per wallet, not per payout. */
#define GROSS	3
#define FEE	1
#define NET	2
#define OTHER	3
#define B0	10

mtype = {
	VERIFIED, REQUESTED, SUCCESS, FAILED, EXPIRED, CANCELLED, RETURNED,	/* stored statuses */
	UNKNOWN, PENDING,	/* the vendor's: it never saw the reference; accepted, in flight */
	REJECTED, LOST, NOTSENT, NOMOVE, HINT
};

/* A move's result. */
#define MOVED	0
#define STALE	1	/* models.ErrStaleStatus */
#define REFUSED	2	/* the ledger refused a lock going negative */

/* The disbursement row. */
mtype status = VERIFIED;
byte attempts;			/* submit_attempts */
byte attAt;			/* submit_attempted_at: when the latest claim was
				 * made, as the number of claims made by then; 0
				 * (NULL) when no attempt is left */
byte claims;			/* claims made so far: the clock as claims read it */
bool lockExpired;		/* lock_expires_at passed */
bool lateRecorded;		/* a row in disbursement_late_results */
bool reopened;			/* a move was written on a final row (but a return) */

/* Each service process's latest claim: its lease still running, the
 * process still at it (about to call, waiting, or about to write), its
 * request on its way. latest: whose claim the row's submit_attempted_at
 * is; leases end in the order of their claims. */
bool lease[2], busy[2], inflight[2];
byte latest;

/* The ledger: the wallet, the system accounts, this payout's share. */
short balance = B0;
short locked = OTHER + GROSS;
short clearing;			/* system:vendor_clearing:<vendor> */
short fees;			/* system:platform_fees */
short plocked = GROSS;		/* this payout's part of locked */
short pdebited;			/* gross debited for it */
short pcredited;		/* net credited back by returns */

/* The vendor. */
mtype vstat = UNKNOWN;		/* the reference as its status query reports it */
byte vpaid;			/* transfers it paid under the reference */
byte vextra;			/* transfers beyond the first, not settled yet */
bool retDone;			/* its return window is over (returned or not) */
bool contradicted;		/* it paid after reporting FAILED (CONTRA) */

byte faults;
bool quiet;			/* nothing can happen any more */

chan req = [2] of { byte };	/* submit requests on their way: the caller */
chan rep[2] = [1] of { mtype };	/* each caller's answer */
chan cb = [2] of { mtype };	/* callbacks on their way */

bool release;		/* a temporary of move, false between steps */

#define OPEN(s)		(s == VERIFIED || s == REQUESTED)
#define TERMINAL(s)	(s == SUCCESS || s == FAILED || s == EXPIRED || s == CANCELLED || s == RETURNED)
#define PAIDST(s)	(s == SUCCESS || s == RETURNED)
#define UNPAIDST(s)	(s == FAILED || s == EXPIRED || s == CANCELLED)
#define LEASE_OVER	(!lease[latest])
/* A paid payout is watched (return checks, callbacks) while the vendor
 * may still return it or has: DISBURSEMENT_RETURN_WATCH outlasts the
 * bank's return window. */
#define WATCHED		(vstat == RETURNED || (vstat == SUCCESS && !retDone))
/* What the sweep finds due: an open row, or a paid one under watch. */
#define WORK_LEFT	(OPEN(status) || (status == SUCCESS && WATCHED))

/* The guards the variants remove. */
#if defined(UNGUARDED_MOVE)
#define STATUS_GUARD(from, to)	true
#elif defined(UNGUARDED_RETURN)
#define STATUS_GUARD(from, to)	(status == from || (from == SUCCESS && to == RETURNED))
#else
#define STATUS_GUARD(from, to)	(status == from)
#endif
/* The expiry's guard on the attempts read: their count and the latest
 * one's claim time (EXPIRY_TIME: the time it checks; 0: none, the count
 * only). */
#ifdef NO_ATTEMPT_GUARD
#define EXPIRY_CHECKS	false
#else
#define EXPIRY_CHECKS	true
#endif
#ifdef EXPIRY_COUNT_ONLY
#define EXPIRY_TIME(dat)	0
#else
#define EXPIRY_TIME(dat)	dat
#endif
#ifdef UNGUARDED_REJECTION
#define REJECTION_CHECKS	false
#else
#define REJECTION_CHECKS	true
#endif
/* The guard on the attempts read (models.AttemptsRead): their count, and
 * the latest one's claim time no later than read (no time read: none is
 * checked, as when the count is 0 and no attempt is left). A claim
 * checks both, as an expiry does. */
#define ATTEMPTS_READ(da, dat)	(attempts == da && (dat == 0 || attAt <= dat))
#if defined(NO_CLAIM_GUARD)
#define CLAIM_GUARD(da, dat)	true
#elif defined(CLAIM_COUNT_ONLY)
#define CLAIM_GUARD(da, dat)	(attempts == da)
#else
#define CLAIM_GUARD(da, dat)	ATTEMPTS_READ(da, dat)
#endif
/* Whether the answer of a submit of a payout read with da attempts (0:
 * a first submit) is cut at its lease. */
#if defined(NO_DEADLINE)
#define BOUNDED(da)	false
#elif defined(NO_RESUBMIT_DEADLINE)
#define BOUNDED(da)	(da == 0)
#else
#define BOUNDED(da)	true
#endif
#ifdef NO_SWEEP
#define RESOLVES	false
#else
#define RESOLVES	true
#endif

/* Bounds that keep a broken variant's runs finite; within_bounds shows
 * the model itself never reaches them. */
#define MAXATT	(MAXFAULT + 2)	/* claims stop at this many attempts */
#define MAXEXTRA	1	/* transfers the vendor takes beyond the first */

/*
 * transitionAll for one payout: the path from `from`, the status the row
 * was read in, to `to` (the steps between implied: VERIFIED -> REQUESTED
 * -> SUCCESS -> RETURNED), written only if the row is still `from` (and,
 * with checkAtt, still has att attempts, the latest claimed no later
 * than attT unless 0: Move.IfAttempts), with its money in the same
 * transaction: a path through SUCCESS debits the gross (net to clearing,
 * fee to the platform), a path from an open status to a final one
 * releases the lock (refused should the wallet's lock go negative),
 * RETURNED credits the net back.
 */
inline move(from, to, checkAtt, att, attT, res) {
	d_step {
		if
		:: STATUS_GUARD(from, to) && (!checkAtt || ATTEMPTS_READ(att, attT)) ->
			release = (TERMINAL(to) && OPEN(from));
			if
			:: release && locked < GROSS -> res = REFUSED
			:: else ->
				if
				:: PAIDST(to) && OPEN(from) ->
					balance = balance - GROSS; clearing = clearing + NET;
					fees = fees + FEE; pdebited = pdebited + GROSS
				:: else -> skip
				fi;
				if
				:: release -> locked = locked - GROSS; plocked = plocked - GROSS
				:: else -> skip
				fi;
				if
				:: to == RETURNED -> balance = balance + NET; clearing = clearing - NET; pcredited = pcredited + NET
				:: else -> skip
				fi;
				reopened = reopened || (TERMINAL(status) && !(status == SUCCESS && to == RETURNED));
				status = to;
				res = MOVED
			fi;
			release = false
		:: else -> res = STALE
		fi
	}
}

/* resultMoves: where a vendor result r takes a payout read in from. */
inline resultTo(from, r, to) {
	if
	:: from == VERIFIED && r == PENDING -> to = REQUESTED
	:: OPEN(from) && (r == SUCCESS || r == FAILED || r == RETURNED) -> to = r
	:: from == SUCCESS && r == RETURNED -> to = RETURNED
	:: else -> to = NOMOVE
	fi
}

/* sameResult and olderNews. */
#define SAME(s, r)	((s == SUCCESS && r == SUCCESS) || (s == FAILED && r == FAILED) || (s == RETURNED && r == RETURNED))
#define OLDER(s, r)	(r == PENDING && (s == SUCCESS || s == FAILED || s == RETURNED))

/*
 * applyObserved: a vendor result r judged against the row as read (dst):
 * an open payout, or a paid one reported returned, moves; when the row
 * moved meanwhile the result is judged once more against the row re-read.
 * A repeat of the final status, or older news, changes nothing; anything
 * else contradicting a final status is recorded (recordLate), never
 * applied.
 */
inline applyObserved(dst, r) {
	do
	:: atomic { !TERMINAL(dst) || (dst == SUCCESS && r == RETURNED) ->
		resultTo(dst, r, to);
		if
		:: to == NOMOVE -> break
		:: else ->
			move(dst, to, false, 0, 0, res);
			if
			:: res != STALE || k > 0 -> break
			:: else -> k = 1; dst = status
			fi
		fi }
	:: atomic { else ->
		if
		:: SAME(dst, r) || OLDER(dst, r) -> skip
		:: else -> lateRecorded = true
		fi;
		break }
	od;
	k = 0
}

/*
 * callVendor for the claimed attempt att: refused before it left (the
 * vendor's breaker: notSent gives the attempt back, guarded on the
 * count, unless the submit's deadline has passed; the claim time is
 * cleared when no attempt is left, kept otherwise), or the caller crashes
 * first, or it is sent (unless the lease, the call's deadline, has
 * passed) and its answer awaited; the caller may crash while it waits.
 */
inline callVendor(me, att, bounded, ans) {
	if
	:: atomic { faults < MAXFAULT ->
		faults++; busy[me] = false;
		if
		:: status == VERIFIED && attempts == att && (!bounded || lease[me]) ->
			attempts--;
			if
			:: attempts == 0 -> attAt = 0
			:: else -> skip
			fi
		:: else -> skip
		fi;
		ans = NOTSENT }
	:: atomic { faults < MAXFAULT -> faults++; busy[me] = false; ans = LOST }
	:: atomic { true ->
		do
		:: nempty(rep[me]) -> rep[me]?_
		:: empty(rep[me]) -> break
		od;
		if
		:: lease[me] && nfull(req) -> req!me; inflight[me] = true; ans = PENDING
		:: !lease[me] || full(req) -> busy[me] = false; ans = LOST
		fi }
	fi;
	if
	:: ans == PENDING ->
		if
		:: rep[me]?ans
		:: atomic { faults < MAXFAULT -> faults++; busy[me] = false; ans = LOST }
		fi
	:: else -> skip
	fi
}

/*
 * submitReady for one claimed payout: the call, then its answer's moves;
 * a result whose move found the row changed is judged again against the
 * row as stored (rejudge). A rejection answers its attempt only: FAILED
 * is written only while att is still the latest attempt (Move.IfAttempts,
 * the count only: a later attempt is a higher one); found stale, it
 * decides nothing (outcome unknown: the payout is asked about later).
 * Every submit, first or again, alone or in a batch, runs its call and
 * the writes of its answer under a deadline at its claim's lease
 * (submitAll, SubmitDue, SubmitClaimed): a write the deadline cuts does
 * not happen, and the payout is resolved later by asking. Without it
 * (NO_DEADLINE, or NO_RESUBMIT_DEADLINE for a resubmit) only the call
 * ends by the lease (the vendor adapter's timeout).
 */
inline submitClaimed(me, att, bounded) {
	callVendor(me, att, bounded, ans);
	if
	:: ans == NOTSENT || ans == LOST -> busy[me] = false
	:: atomic { ans != NOTSENT && ans != LOST && bounded && !lease[me] -> busy[me] = false; ans = LOST }
	:: atomic { ans == REJECTED && (!bounded || lease[me]) ->
		move(VERIFIED, FAILED, REJECTION_CHECKS, att, 0, res); busy[me] = false }
	:: atomic { ans != NOTSENT && ans != LOST && ans != REJECTED && (!bounded || lease[me]) ->
		resultTo(VERIFIED, ans, to);
		move(VERIFIED, to, false, 0, 0, res);
		busy[me] = false;
		dst = status };
		if
		:: res == STALE -> applyObserved(dst, ans)
		:: else -> skip
		fi
	fi
}

/* claim for one payout read with da attempts, the latest claimed at dat:
 * a guarded update (still VERIFIED, still those attempts, lock running)
 * counts the attempt, stamps its claim time and starts its lease; then
 * the call. */
inline submitAll(me, da, dat) {
	atomic {
		if
		:: status == VERIFIED && CLAIM_GUARD(da, dat) && !lockExpired && attempts < MAXATT ->
			attempts++; claims++; attAt = claims; att = attempts;
			lease[me] = true; busy[me] = true; latest = me; claimed = true
		:: else -> claimed = false
		fi
	};
	if
	:: claimed -> claimed = false; submitClaimed(me, att, BOUNDED(da))
	:: else -> skip
	fi
}

/*
 * resolveAttempted: an attempt was claimed and its answer never came.
 * What the vendor says about the reference is applied; when it does not
 * know the reference, the payout is resubmitted (or, the lock having run
 * out, expired: guarded on the attempts read, count and time, as the
 * claim is) only if the lease had passed before the question was asked.
 */
inline resolveAttempted(me, da, dat) {
#if defined(NO_ASK)
	ans = UNKNOWN;
#elif defined(LEASE_AFTER_QUERY)
	passed = LEASE_OVER;
#endif
	if
	:: ans == UNKNOWN ->
		if
		:: !passed -> skip
		:: else ->
			if
			:: lockExpired -> move(VERIFIED, EXPIRED, EXPIRY_CHECKS, da, EXPIRY_TIME(dat), res)
			:: else -> submitAll(me, da, dat)
			fi
		fi
	:: else -> dst = VERIFIED; applyObserved(dst, ans)
	fi
}

/*
 * What a process learns with the row (ds, da), at the same instant: the
 * vendor's status query (Poll, checkReturn, resolveAttempted), and
 * whether the latest claim's lease had passed. NO_LEASE resubmits without
 * the lease; LEASE_AFTER_QUERY reads the clock after the vendor answered
 * (resolveAttempted); NO_ASK does not use the answer there.
 */
#if defined(NO_LEASE)
#define READ_AND_ASK	passed = true; ans = vstat
#elif defined(LEASE_AFTER_QUERY)
#define READ_AND_ASK	ans = vstat
#else
#define READ_AND_ASK	passed = LEASE_OVER; ans = vstat
#endif

/* With TRUST_CALLBACK a callback's status is believed; otherwise a
 * callback is only a hint, and the model sends it as one. */
#ifdef TRUST_CALLBACK
#define CALLBACK(s)	cb!s
#define CALLBACK_SAYS(c)	ans = c
#else
#define CALLBACK(s)	cb!HINT
#define CALLBACK_SAYS(c)	ans = vstat
#endif

/*
 * A service process (the API's or a worker's), again and again doing one
 * of its jobs for the row, concurrently with the other process:
 *  - what the sweep, a pump or a queued task hands it: Submit (the claim
 *    and the submit of a fresh payout, resolveAttempted of an earlier
 *    attempt, the expiry of one whose lock ran out before any attempt),
 *    Poll of a REQUESTED payout, the return check of a paid one; the
 *    API's inline submit is the claim of a fresh payout before anything
 *    else happens;
 *  - a vendor callback (ApplyVendorResult): a payout never sent ignores
 *    it; otherwise the status query's answer is applied.
 */
proctype service(byte me) {
	mtype ds, dst, ans, to, cst;
	byte da, dat, att, k, res;
	bool claimed, passed;
	do
	:: atomic { WORK_LEFT -> ds = status; da = attempts; dat = attAt; READ_AND_ASK };
		if
		:: ds == VERIFIED && da == 0 ->
			if
			:: lockExpired -> move(VERIFIED, EXPIRED, EXPIRY_CHECKS, 0, EXPIRY_TIME(dat), res)
			:: else -> submitAll(me, 0, dat)
			fi
		:: ds == VERIFIED && da > 0 && RESOLVES -> resolveAttempted(me, da, dat)
		:: ds == REQUESTED || ds == SUCCESS ->
			if
			:: ans == SUCCESS || ans == FAILED || ans == RETURNED -> dst = ds; applyObserved(dst, ans)
			:: else -> skip
			fi
		:: else -> skip
		fi;
		d_step { ds = 0; dst = 0; ans = 0; to = 0; da = 0; dat = 0; att = 0; k = 0; res = 0; claimed = false; passed = false }
	:: atomic { cb?cst -> ds = status; da = attempts; CALLBACK_SAYS(cst) };
		if
		:: da == 0 || ans == UNKNOWN -> skip
		:: else -> dst = ds; applyObserved(dst, ans)
		fi;
		d_step { cst = 0; ds = 0; dst = 0; ans = 0; to = 0; da = 0; k = 0; res = 0 }
	od
}

/*
 * The vendor's front door: a request may be lost on its way (the caller
 * sees a failed call); otherwise it is rejected (nothing recorded) or
 * accepted as a transfer, in flight or paid at once, and answered; the
 * answer may be lost. It keeps no idempotency of its own unless
 * VENDOR_DEDUP: a second request under a reference it knows is another
 * transfer.
 */
proctype vendor() {
	byte who;
	mtype ans;
	do
	:: atomic {
		req?who -> inflight[who] = false;
		if
		:: faults < MAXFAULT -> faults++; ans = LOST
		:: true ->
			if
#ifdef VENDOR_DEDUP
			:: vstat != UNKNOWN -> ans = vstat
			:: vstat == UNKNOWN -> ans = REJECTED
#else
			:: ans = REJECTED
			:: vstat != UNKNOWN && vextra < MAXEXTRA -> vextra++; ans = PENDING
#endif
			:: vstat == UNKNOWN -> vstat = PENDING; ans = PENDING
			:: vstat == UNKNOWN && nfull(cb) -> vstat = SUCCESS; vpaid++; ans = SUCCESS; CALLBACK(SUCCESS)
			fi;
			if
			:: faults < MAXFAULT -> faults++; ans = LOST
			:: true -> skip
			fi
		fi;
		if
		:: nfull(rep[who]) -> rep[who]!ans
		:: full(rep[who]) -> skip
		fi;
		who = 0; ans = 0
	}
	od
}

/*
 * The vendor's back office: a transfer in flight is paid or fails, and
 * the vendor calls back; a paid one may be returned by the bank, once,
 * days later (with a callback), until the return window closes.
 */
proctype settle() {
	do
	:: atomic { vstat == PENDING && nfull(cb) ->
		if
		:: vstat = SUCCESS; vpaid++; CALLBACK(SUCCESS)
		:: vstat = FAILED; CALLBACK(FAILED)
		fi }
	:: atomic { vextra > 0 -> vextra--;
		if
		:: vpaid++
		:: skip
		fi }
	:: atomic { vstat == SUCCESS && !retDone && nfull(cb) -> vstat = RETURNED; retDone = true; CALLBACK(RETURNED) }
	:: atomic { vstat == SUCCESS && !retDone -> retDone = true }
#ifdef CONTRA
	:: atomic { vstat == FAILED && !contradicted && nfull(cb) -> contradicted = true; vstat = SUCCESS; vpaid++; CALLBACK(SUCCESS) }
#endif
	od
}

/*
 * Time: the lock's TTL runs out (it matters only while VERIFIED); a
 * claim's lease passes after any earlier claim's, once its request is no
 * longer on its way (a call ends by its lease: DISBURSEMENT_SUBMIT_LEASE
 * is above the vendor's timeout) and its process is done with it, or
 * while the process is still at it, as a fault (it stalled).
 */
#define LEASE_ENDS(c)	(lease[c] && !inflight[c] && (latest != c || !lease[1 - c]))
proctype clock() {
	do
	:: atomic { status == VERIFIED && !lockExpired -> lockExpired = true }
	:: atomic { LEASE_ENDS(0) && !busy[0] -> lease[0] = false }
	:: atomic { LEASE_ENDS(1) && !busy[1] -> lease[1] = false }
	:: atomic { LEASE_ENDS(0) && busy[0] && faults < MAXFAULT -> faults++; lease[0] = false }
	:: atomic { LEASE_ENDS(1) && busy[1] && faults < MAXFAULT -> faults++; lease[1] = false }
	od
}

#ifdef TRUST_CALLBACK
/* A forged, replayed or stale callback, at any time. */
proctype forger() {
	CALLBACK(FAILED)
}
#endif

proctype monitor() {
	atomic { timeout -> quiet = true }
}

init {
	atomic {
		run service(0);
		run service(1);
		run vendor();
		run settle();
		run clock();
#ifdef TRUST_CALLBACK
		run forger();
#endif
		run monitor()
	}
}

/* --- Properties ---------------------------------------------------------- */

/* 1. The vendor pays the disbursement at most once. */
#define PAID_ONCE	(vpaid <= 1)
ltl paid_once { [] PAID_ONCE }

/* 2. Never lost: the ledger always follows the status (the gross locked
 * while open, debited once paid, released otherwise; the wallet's lock is
 * the others' and this one's; every posting balances), and once nothing
 * can happen any more the store agrees with the vendor: paid means SUCCESS
 * or RETURNED, never paid means an unpaid final status, its lock
 * released; a return reached the wallet. A vendor that contradicts itself
 * (CONTRA) is excused when the contradiction was recorded for operators. */
#define LEDGER_OK	(balance + clearing + fees == B0 && locked == OTHER + plocked && \
			 ((OPEN(status) && plocked == GROSS) || (!OPEN(status) && plocked == 0)) && \
			 ((PAIDST(status) && pdebited == GROSS) || (!PAIDST(status) && pdebited == 0)) && \
			 balance == B0 - pdebited + pcredited)
#define AGREES		(((vpaid > 0 && PAIDST(status)) || (vpaid == 0 && UNPAIDST(status))) && \
			 (vstat != RETURNED || status == RETURNED))
#define NEVER_LOST	(LEDGER_OK && (!quiet || AGREES || (contradicted && lateRecorded)))
ltl never_lost { [] NEVER_LOST }

/* 3. With the vendor answering in the end (weak fairness; a bounded
 * number of faults), the payout reaches a final status. */
ltl terminates { <> TERMINAL(status) }

/* 4. A return is credited once, and only for a return the vendor made. */
#define RETURN_ONCE	(pcredited <= NET && (pcredited == 0 || vstat == RETURNED))
ltl return_once { [] RETURN_ONCE }

/* 5. A final status stays: no move is ever written on a final row but the
 * return of a paid one, so a late or contradicting result never moves it,
 * nor money. */
ltl final_stays { [] !reopened }

/* The bounds cut nothing: no run reaches them. */
#define WITHIN_BOUNDS	(attempts < MAXATT)
ltl within_bounds { [] WITHIN_BOUNDS }

/* Every safety property at once: one search where all are expected to
 * hold (model_test.go names the one that fails, should one). */
ltl safety { [] (PAID_ONCE && NEVER_LOST && RETURN_ONCE && !reopened && WITHIN_BOUNDS) }

/* Not a property: it fails when the model can come to rest, which shows
 * that the second half of never_lost is not checked in vain. */
ltl never_quiet { [] !quiet }
