package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/webhooks"
)

// disbursementTask adapts a payouts step to an asynq handler.
func disbursementTask(step func(context.Context, uuid.UUID) error) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		id, err := tasks.ParseDisbursement(t)
		if err != nil {
			return err
		}
		return outcome(ctx, t, id, step(ctx, id))
	}
}

// outcome turns a payouts error into what asynq should do with the task:
//   - nil, or a row someone else moved first: done;
//   - a vendor call refused before it left (the vendor's circuit breaker,
//     vendors.ErrNotSent): retry once the breaker lets a probe through
//     (tasks.RetryDelay reads the delay from the error), not counted as a
//     failure (isFailure), so an outage of any length archives nothing;
//   - unknown vendor outcome, storage trouble: retry with backoff (the next
//     attempt re-reads the row and asks the vendor before submitting);
//   - no such disbursement, a refused move: nothing a retry can fix; logged
//     at error level and not retried.
func outcome(ctx context.Context, t *asynq.Task, id uuid.UUID, err error) error {
	log := slog.With(slog.String("task", t.Type()), slog.String("disbursement_id", id.String()))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, vendors.ErrNotSent):
		log.InfoContext(ctx, "payout task waits for its vendor", slog.Any("reason", err))
		return err
	case errors.Is(err, payouts.ErrOutcomeUnknown), errors.Is(err, models.ErrStaleStatus):
		log.InfoContext(ctx, "payout task will be retried", slog.Any("reason", err))
		return err
	case errors.Is(err, models.ErrDisbursementNotFound), errors.Is(err, models.ErrTransitionRefused):
		log.ErrorContext(ctx, "payout task cannot proceed", slog.Any("error", err))
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	default:
		log.WarnContext(ctx, "payout task failed; will be retried", slog.Any("error", err))
		return err
	}
}

// periodic adapts a periodic payouts job; its report is logged when it did
// something.
func periodic(name string, job func(context.Context) (payouts.SweepReport, error)) asynq.HandlerFunc {
	return func(ctx context.Context, _ *asynq.Task) error {
		report, err := job(ctx)
		if report != (payouts.SweepReport{}) {
			slog.InfoContext(ctx, name, slog.Any("report", report))
		}
		return err
	}
}

// deliverWebhook makes one delivery attempt. A failed attempt is retried
// after the delay of the event's schedule (tasks.RetryDelay reads it from
// the error); after the schedule's last attempt the task is archived, so
// operators see it in the dashboard and can redeliver it.
func deliverWebhook(d *webhooks.Deliverer) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		id, err := tasks.ParseEvent(t)
		if err != nil {
			return err
		}
		err = d.Deliver(ctx, id)
		var later *webhooks.RetryLater
		switch {
		case err == nil, errors.As(err, &later):
			return err
		case errors.Is(err, webhooks.ErrGaveUp), errors.Is(err, models.ErrNotFound):
			slog.ErrorContext(ctx, "webhook task archived", slog.String("event_id", id.String()), slog.Any("error", err))
			return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
		default:
			slog.WarnContext(ctx, "webhook task failed; will be retried", slog.String("event_id", id.String()), slog.Any("error", err))
			return err
		}
	}
}

// paymentTask adapts a payments step to an asynq handler: a missing payment
// is not retried; anything else failing is. A step run before its payment
// was due is retried then (isFailure does not count it as a failure).
func paymentTask(step func(context.Context, uuid.UUID) error) asynq.HandlerFunc {
	return func(ctx context.Context, t *asynq.Task) error {
		id, err := tasks.ParsePayment(t)
		if err != nil {
			return err
		}
		err = step(ctx, id)
		var early *payments.NotDueError
		switch {
		case errors.Is(err, models.ErrPaymentNotFound):
			return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
		case errors.As(err, &early):
			slog.InfoContext(ctx, "payment task ran early; it runs again when due", slog.String("task", t.Type()),
				slog.String("payment_id", id.String()), slog.Duration("wait", early.Wait))
		case err != nil:
			slog.WarnContext(ctx, "payment task failed; will be retried", slog.String("task", t.Type()),
				slog.String("payment_id", id.String()), slog.Any("error", err))
		}
		return err
	}
}

// isFailure tells asynq which errors are failures: a payment task that ran
// before its due time (asynq keeps schedule times to the second) is retried
// on time without counting against its retries or showing as failed; so is
// a payout task whose vendor call was refused before it left (its circuit
// breaker is open).
func isFailure(err error) bool {
	var early *payments.NotDueError
	return !errors.As(err, &early) && !errors.Is(err, vendors.ErrNotSent)
}
