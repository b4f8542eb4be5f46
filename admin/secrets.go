package admin

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/webhooks"
)

// errNoPreviousKey: rotate-key was run without the key it rotates away from.
var errNoPreviousKey = errors.New("SECRETS_KEY_PREVIOUS is not set: set SECRETS_KEY to the new key and SECRETS_KEY_PREVIOUS to the old one (on every process first, see README: Rotating SECRETS_KEY), then run rotate-key")

// sealedValue is one sealed value of a client: a credential's secret or a
// webhook URL.
type sealedValue struct {
	where   string // "client <id> credential <id> signing_secret", for operators
	binding credentials.Binding
	stored  string
	// plainURL: a webhook URL of an earlier version, in plain text.
	plainURL bool
	// set writes the resealed value into the row being saved.
	set func(sealed string)
}

// clientSecrets are a client's row and all its credentials (revoked ones
// too: their secrets are sealed like the others), and their sealed values.
type clientSecrets struct {
	client models.Client
	creds  []models.Credential
	values []sealedValue
}

// loadClientSecrets reads one client's sealed values in tx.
func loadClientSecrets(tx *gorm.DB, c models.Client) (*clientSecrets, error) {
	cs := &clientSecrets{client: c}
	if err := tx.Where("client_id = ?", c.ID).Order("created_at, id").Find(&cs.creds).Error; err != nil {
		return nil, err
	}
	for i := range cs.creds {
		cr := &cs.creds[i]
		if cr.SigningSecretEnc != nil {
			cs.values = append(cs.values, sealedValue{
				where:   fmt.Sprintf("client %s credential %s signing_secret", c.ID, cr.ID),
				binding: credentials.CredentialBinding(c.ID, cr.ID, credentials.FieldSigningSecret),
				stored:  *cr.SigningSecretEnc,
				set:     func(s string) { cr.SigningSecretEnc = &s },
			})
		}
		cs.values = append(cs.values, sealedValue{
			where:   fmt.Sprintf("client %s credential %s callback_secret", c.ID, cr.ID),
			binding: credentials.CredentialBinding(c.ID, cr.ID, credentials.FieldCallbackSecret),
			stored:  cr.CallbackSecretEnc,
			set:     func(s string) { cr.CallbackSecretEnc = s },
		})
	}
	cl := &cs.client
	for _, u := range []struct {
		field         credentials.Field
		sealed, shown *string
	}{
		{credentials.FieldPayoutWebhookURL, &cl.PayoutWebhookURLEnc, &cl.PayoutWebhookURL},
		{credentials.FieldPaymentWebhookURL, &cl.PaymentWebhookURLEnc, &cl.PaymentWebhookURL},
	} {
		v := sealedValue{
			where:   fmt.Sprintf("client %s %s", c.ID, u.field),
			binding: credentials.ClientBinding(c.ID, u.field),
			stored:  *u.sealed,
			set:     func(s string) { *u.sealed = s },
		}
		switch {
		case *u.sealed != "":
		case *u.shown != "":
			// Sealing a plain URL also replaces it by its display form.
			raw := *u.shown
			v.stored, v.plainURL = raw, true
			v.set = func(s string) { *u.sealed, *u.shown = s, webhooks.DisplayURL(raw) }
		default:
			continue
		}
		cs.values = append(cs.values, v)
	}
	return cs, nil
}

// open returns the plaintext of v.
func (v sealedValue) open(s *credentials.Sealer) (string, error) {
	if v.plainURL {
		return v.stored, nil
	}
	return s.Open(v.stored, v.binding)
}

// legacy reports whether v is of an earlier version: not bound to its
// place, or not sealed at all.
func (v sealedValue) legacy() bool { return v.plainURL || credentials.IsLegacy(v.stored) }

// RotateKeyResult is the answer of secrets rotate-key. Values are counted
// one per signing secret, callback secret (of every credential, revoked
// ones too) and webhook URL.
type RotateKeyResult struct {
	KeyID          string `json:"key_id"`          // the id of SECRETS_KEY, under which everything is now sealed
	Checked        int    `json:"checked"`         // sealed values found
	Resealed       int    `json:"resealed"`        // resealed under SECRETS_KEY by this run
	AlreadyCurrent int    `json:"already_current"` // sealed under SECRETS_KEY already (an earlier run)
	Legacy         int    `json:"legacy"`          // of them, values of an earlier version and plain-text URLs upgraded
	Unreadable     int    `json:"unreadable"`      // could not be opened; left as they are
	// UnreadableValues names them ("client <id> credential <id>
	// callback_secret"), so the operator can reset each.
	UnreadableValues []string `json:"unreadable_values"`
}

func (r *RotateKeyResult) commandFailure() string {
	if r.Unreadable == 0 {
		return ""
	}
	return fmt.Sprintf("%d sealed values could not be opened and were left as they are (unreadable_values names them); reset them with payoutd admin client rotate-credentials / client update", r.Unreadable)
}

// rotateBatch is how many clients are read at a time; each client is
// resealed in a transaction of its own.
const rotateBatch = 200

// RotateKey reseals every sealed value under SECRETS_KEY: values under
// SECRETS_KEY_PREVIOUS, values of earlier versions (no key id, not bound to
// their client and field) and webhook URLs still in plain text. Each client
// is one transaction with its row locked, so a concurrent client update or
// credential rotation waits rather than being overwritten. It can be run
// again at any time, after an interruption too: values already under
// SECRETS_KEY are left alone.
func RotateKey(ctx context.Context, d Deps) (*RotateKeyResult, error) {
	if !d.Sealer.HasPrevious() {
		return nil, errNoPreviousKey
	}
	res := &RotateKeyResult{KeyID: d.Sealer.CurrentKeyID(), UnreadableValues: []string{}}
	var after uuid.UUID
	for {
		var ids []uuid.UUID
		if err := d.DB.WithContext(ctx).Model(&models.Client{}).Where("id > ?", after).
			Order("id").Limit(rotateBatch).Pluck("id", &ids).Error; err != nil {
			return nil, err
		}
		for _, id := range ids {
			if err := rotateClient(ctx, d, id, res); err != nil {
				return nil, fmt.Errorf("client %s: %w", id, err)
			}
		}
		if len(ids) < rotateBatch {
			break
		}
		after = ids[len(ids)-1]
	}
	return res, nil
}

// rotateClient reseals one client's values in a transaction of its own,
// with the client's row locked, and adds what it found to res.
func rotateClient(ctx context.Context, d Deps, id uuid.UUID, res *RotateKeyResult) error {
	var counted RotateKeyResult
	err := d.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		c, err := lockClient(tx, id)
		if err != nil {
			return err
		}
		cs, err := loadClientSecrets(tx, c)
		if err != nil {
			return err
		}
		counted = resealValues(d.Sealer, cs.values)
		if counted.Resealed == 0 {
			return nil
		}
		return saveResealed(tx, cs)
	})
	if err != nil {
		return err
	}
	// Counted only once committed, so an interrupted run reports nothing
	// it did not do.
	res.add(counted)
	if counted.Resealed > 0 {
		d.clientChanged(ctx, id)
	}
	return nil
}

// lockClient reads client id in tx, its row locked for update on
// PostgreSQL (SQLite has no row locks).
func lockClient(tx *gorm.DB, id uuid.UUID) (models.Client, error) {
	var c models.Client
	q := tx
	if tx.Dialector.Name() == "postgres" {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	err := q.Where("id = ?", id).Take(&c).Error
	return c, err
}

// resealValues reseals under the sealer's current key each value that
// opens and is not under it already, into the row it belongs to, and
// counts what it found.
func resealValues(sealer *credentials.Sealer, values []sealedValue) RotateKeyResult {
	var counted RotateKeyResult
	for _, v := range values {
		counted.Checked++
		// Every value is opened where it is, also one under the current
		// key already: a value moved from another client or field is
		// named, never resealed into its new place.
		plain, err := v.open(sealer)
		if err != nil {
			counted.Unreadable++
			counted.UnreadableValues = append(counted.UnreadableValues, v.where+": "+err.Error())
			continue
		}
		if sealer.IsCurrent(v.stored) {
			counted.AlreadyCurrent++
			continue
		}
		if v.legacy() {
			counted.Legacy++
		}
		v.set(sealer.Seal(plain, v.binding))
		counted.Resealed++
	}
	return counted
}

// saveResealed writes a client's credentials' secrets and webhook URLs as
// resealValues left them.
func saveResealed(tx *gorm.DB, cs *clientSecrets) error {
	for i := range cs.creds {
		cr := &cs.creds[i]
		if err := tx.Model(&models.Credential{}).Where("id = ?", cr.ID).Updates(map[string]any{
			"signing_secret_enc": cr.SigningSecretEnc, "callback_secret_enc": cr.CallbackSecretEnc}).Error; err != nil {
			return err
		}
	}
	return tx.Model(&models.Client{}).Where("id = ?", cs.client.ID).Updates(map[string]any{
		"payout_webhook_url": cs.client.PayoutWebhookURL, "payout_webhook_url_enc": cs.client.PayoutWebhookURLEnc,
		"payment_webhook_url": cs.client.PaymentWebhookURL, "payment_webhook_url_enc": cs.client.PaymentWebhookURLEnc,
		"updated_at": models.Now()}).Error
}

// add counts o's values in r.
func (r *RotateKeyResult) add(o RotateKeyResult) {
	r.Checked += o.Checked
	r.Resealed += o.Resealed
	r.AlreadyCurrent += o.AlreadyCurrent
	r.Legacy += o.Legacy
	r.Unreadable += o.Unreadable
	r.UnreadableValues = append(r.UnreadableValues, o.UnreadableValues...)
}

// checkSealedValues adds to a reconcile report what an operator must do
// about sealed values: values of earlier versions and plain-text webhook
// URLs (the swap of sealed values between clients stays possible until they
// are resealed), values that do not open where they are (problems), and
// values still under SECRETS_KEY_PREVIOUS (a warning: a rotation is not
// finished).
func checkSealedValues(ctx context.Context, d Deps, report *ledger.Report) error {
	var legacy, previous int
	var after uuid.UUID
	for {
		var clients []models.Client
		if err := d.DB.WithContext(ctx).Where("id > ?", after).Order("id").Limit(rotateBatch).Find(&clients).Error; err != nil {
			return err
		}
		for _, c := range clients {
			cs, err := loadClientSecrets(d.DB.WithContext(ctx), c)
			if err != nil {
				return err
			}
			for _, v := range cs.values {
				if _, err := v.open(d.Sealer); err != nil {
					report.Problems = append(report.Problems, fmt.Sprintf("%s cannot be opened: %v", v.where, err))
					continue
				}
				switch {
				case v.legacy():
					legacy++
				case !d.Sealer.IsCurrent(v.stored):
					previous++
				}
			}
		}
		if len(clients) < rotateBatch {
			break
		}
		after = clients[len(clients)-1].ID
	}
	if legacy > 0 {
		report.Problems = append(report.Problems, fmt.Sprintf("%d secrets or webhook URLs are stored as earlier versions did (not bound to their client and field, or in plain text): set a new SECRETS_KEY with the old one as SECRETS_KEY_PREVIOUS and run payoutd admin secrets rotate-key", legacy))
	}
	if previous > 0 {
		report.Warnings = append(report.Warnings, fmt.Sprintf("%d sealed values are still under SECRETS_KEY_PREVIOUS: run payoutd admin secrets rotate-key before dropping it", previous))
	}
	report.OK = len(report.Problems) == 0
	return nil
}

func runSecretsRotateKey(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	return RotateKey(ctx, d)
}
