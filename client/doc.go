// Package client is the Go SDK of the payoutd API: wallets, balances, bank
// lists, disbursement quotes, creates, reads and lists, QRIS payments
// (create, read, list), and the verification of the webhooks payoutd sends.
// It uses only the standard library.
//
// # Getting started
//
//	c, err := client.New("https://api.payoutd.example", apiKey, signingSecret)
//	if err != nil { ... }
//	key := client.NewIdempotencyKey() // store it with your order before calling
//	d, err := c.CreateDisbursement(ctx, client.CreateDisbursementRequest{
//		ClientWalletID: walletID,
//		Amount:         "100000", // decimal strings, never floats
//		BankCode:       "bca",
//		AccountNo:      "1234567890",
//		TransferType:   client.BIFAST,
//	}, key)
//
// # Signing
//
// Every request is signed with the service's v2 scheme (docs/api.md): the
// request is serialised to JSON once, t is the current Unix time in
// milliseconds, and x-signature is "t=<t>,v2=<lowercase hex HMAC-SHA256>"
// over the method, the path and query, the Idempotency-Key and the body's
// SHA-256, keyed by the Signing Secret used as the ASCII bytes of its
// 64-character text (WithSignatureV1 signs "t=<t>,v1=…" over t + "." +
// body instead). The bytes signed are the bytes
// sent, and a GET signs the empty body. Because every request carries a
// signature, x-timestamp is never sent.
//
// The service accepts a signature once: sent again, it is answered only
// for the same method, path and Idempotency-Key (a retry), and refused
// with 401 "x-signature was already used; sign the request again" for
// anything else. Every attempt is signed afresh, so this only happens when
// two requests with identical bodies (two creates with different keys) are
// signed in the same millisecond; the Client then waits a millisecond,
// signs again with a later t and resends, once and besides the retries
// below ([IsSignatureUsed] reports a second collision).
//
// # Retries and idempotency
//
// [Client.CreateDisbursement] requires an Idempotency-Key (make one with
// [NewIdempotencyKey] and keep it with your own record of the payout, so a
// retry after a crash reuses it). A create is retried with the same key and
// the same body bytes, re-signed with a fresh t, when the outcome is
// unknown or the service asks for it: network errors and timeouts, 409
// "concurrent request with the same Idempotency-Key; retry", 429 (after
// its Retry-After, when that is at most [MaxRetryAfter]) and 5xx answers
// other than 501. It is not retried when the answer is final:
// every other 4xx (402 Insufficient balance, 409 disbursement was
// cancelled, 410, 422, ...) and 503 "Vendor payout request failed", which
// is the stored outcome of that key (the payout FAILED; retrying with the
// same key answers the same). The service guarantees that one key pays at
// most once, so these retries can never pay twice.
//
// Reads, quotes and the signature check have no side effects and retry on
// the same conditions. Retries back off exponentially with jitter (by
// default 3 retries, 200 ms doubling up to 5 s; see [WithRetries] and
// [WithBackoff]) and stop as soon as the context is done.
//
// # Errors
//
// An answer of the service with a status of 400 or above is returned as
// an [*APIError] carrying the status, the service's message and the
// request id (quote it when asking for support). Use errors.As, or the
// helpers such as [IsInsufficientBalance] and [IsPayoutFailed].
//
// # Lists
//
// [Client.ListDisbursements] and [Client.ListPayments] return one page,
// newest first, with the cursor of the next; [Client.Disbursements] and
// [Client.Payments] follow the cursors for you in a range loop. Rows
// created while you page never shift a page, so each row that existed when
// you started is yielded exactly once.
//
// # Payments
//
// [Client.CreatePayment] creates a QRIS payment. It has no Idempotency-Key,
// so the Client never resends it after an answer that may hide a stored
// payment (a lost connection, a 5xx): it returns the error, and
// [Client.ListPayments] filtered by the payer tells whether it was made.
//
// # Webhooks
//
// payoutd POSTs disbursement and payment events to your webhook URLs,
// signed in x-callback-signature with the Callback Secret. [VerifyWebhook]
// checks the signature over the raw body in constant time and that t is
// within 5 minutes of now; [ParseWebhook] verifies and decodes the event.
// Events may arrive more than once and in any order: deduplicate on
// [WebhookEvent].EventID.
//
// # Amounts
//
// Amounts are [Amount] values: decimal strings as the API sends them
// ("100000", "97500", balances with 4 fraction digits such as
// "10000000.0000"). Parse them with a decimal library, never into a float.
package client
