// Package webhooks delivers signed events to merchant backends: the outcome
// of a payout (disbursement.success, disbursement.failed,
// disbursement.returned) and, with payments, payment.success,
// payment.expired and payment.failed.
//
// An event is recorded (Record) in the same database transaction as the
// state change that causes it, with the exact JSON body it will carry; the
// row is its own outbox. The webhook:deliver task (Deliverer.Deliver) POSTs
// it to the client's URL with
//
//	x-callback-signature: t=<unix ms>,v1=<hex HMAC-SHA256(t + "." + body, Callback Secret)>
//	x-event-id: <event id>
//
// and records every attempt. Any 2xx is delivered; anything else is retried
// with exponential backoff and jitter over about three days (Schedule), then
// the task is archived in asynq and the event marked failed, for operators
// to redeliver. Each attempt is claimed on the event row before it is sent,
// so a task that runs late and the sweep's copy of it never both send.
// On PostgreSQL the deliveries running at the same moment share their claim
// and outcome statements (groups.go); each POST is its own.
// Events of one subject are delivered in order. Receivers dedupe on the
// event id: delivery is at least once.
//
// Guard keeps deliveries away from the service's own network (SSRF): in
// production only https, and no loopback, link-local or private address
// unless configured, checked on the address actually dialled.
package webhooks
