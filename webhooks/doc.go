// Package webhooks will deliver signed events to merchant backends (the
// webhook capability). It holds the callback signing shared with the SDK.
package webhooks

import (
	"time"

	"github.com/payoutd/payoutd/signature"
)

// Sign returns the x-callback-signature header value for body: the same
// scheme as request signing, keyed by the client's Callback Secret.
func Sign(callbackSecret string, body []byte, now time.Time) string {
	return signature.Sign(callbackSecret, body, now)
}
