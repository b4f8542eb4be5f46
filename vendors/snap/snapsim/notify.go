package snapsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/payoutd/payoutd/vendors/snap"
)

// notifiable are the latestTransactionStatus values a notification is
// sent for: the final ones and the refund after success ([BNC-NOTIFY]
// 00 Success, 06 Failed; [AYO-DISB] 04 Refunded).
var notifiable = map[string]bool{"00": true, "04": true, "06": true}

// Flush POSTs a transfer result notification to CallbackURL for every
// transfer whose latestTransactionStatus turned 00, 06 or 04 since its
// last delivered notification, signed as the bank signs it: X-TIMESTAMP,
// and X-SIGNATURE = SHA256withRSA(BankPrivateKey, POST:<relative URL of
// CallbackURL>:<body hash>:<X-TIMESTAMP>) ([BNC-NOTIFY]). A delivery the
// receiver does not answer with 2xx is tried again on the next Flush. It
// returns how many were delivered.
func (b *Bank) Flush(ctx context.Context) (int, error) {
	if b.o.CallbackURL == "" {
		return 0, nil
	}
	if b.o.BankPrivateKey == nil {
		return 0, errors.New("snapsim: notifications need BankPrivateKey")
	}
	type due struct {
		ref, status string
		body        []byte
	}
	var batch []due
	b.mu.Lock()
	refs := make([]string, 0, len(b.transfers))
	for ref := range b.transfers {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		t := b.transfers[ref]
		st, reason := b.observeLocked(t)
		if !notifiable[st] || t.notified == st {
			continue
		}
		batch = append(batch, due{ref, st, b.notificationLocked(t, st, reason)})
	}
	b.mu.Unlock()
	sent := 0
	var errs []error
	for _, d := range batch {
		if ctx.Err() != nil {
			break // stopping: what is left waits for the next Flush
		}
		if err := b.deliver(ctx, d.body); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.ref, err))
			continue
		}
		b.mu.Lock()
		b.transfers[d.ref].notified = d.status
		b.mu.Unlock()
		sent++
	}
	return sent, errors.Join(errs...)
}

// notificationLocked is the body of t's notification, modelled on the
// status inquiry answer (snap.Notification).
func (b *Bank) notificationLocked(t *transfer, st, reason string) []byte {
	amount, _ := snap.FormatAmount(t.amount)
	desc := snap.TransactionStatusDesc[st]
	if reason != "" {
		desc = reason
	}
	body, _ := json.Marshal(snap.Notification{
		OriginalReferenceNo: t.referenceNo, OriginalPartnerReferenceNo: t.ref, OriginalExternalID: t.externalID,
		ServiceCode: snap.ServiceTransfer, TransactionDate: t.date, Amount: &amount,
		BeneficiaryAccountNo: t.account, BeneficiaryBankCode: t.bankCode,
		LatestTransactionStatus: st, TransactionStatusDesc: desc,
	})
	return body
}

// Notify sends one notification of body, signed, to CallbackURL now: a
// test's way to send what the bank would (or a claim it would not).
func (b *Bank) Notify(ctx context.Context, body []byte) error { return b.deliver(ctx, body) }

func (b *Bank) deliver(ctx context.Context, body []byte) error {
	u, err := url.Parse(b.o.CallbackURL)
	if err != nil {
		return err
	}
	ts := snap.Timestamp(b.o.Now())
	sig, err := snap.SignNotify(b.o.BankPrivateKey, http.MethodPost, u.RequestURI(), body, ts)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.o.CallbackURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-TIMESTAMP", ts)
	req.Header.Set("X-SIGNATURE", sig)
	req.Header.Set("X-PARTNER-ID", b.o.PartnerID)
	req.Header.Set("X-EXTERNAL-ID", fmt.Sprint(b.o.Now().UnixNano()))
	resp, err := b.o.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("snapsim notification: receiver answered %s", resp.Status)
	}
	return nil
}

// Run calls Flush every interval until ctx is done.
func (b *Bank) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := b.Flush(ctx); err != nil && ctx.Err() == nil {
				b.o.Logger.WarnContext(ctx, "snapsim notification delivery failed; will retry", slog.Any("error", err))
			}
		}
	}
}
