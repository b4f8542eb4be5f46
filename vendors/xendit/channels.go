package xendit

import (
	"strings"

	"github.com/payoutd/payoutd/models"
)

// channelCodes maps our bank codes (vendors/banks.tsv and the e-wallets of
// vendors.Directory) to Xendit channel codes.
//
// Sources: "Get payout channels", https://docs.xendit.co/apidocs/get-payout-channels
// (ID_BSI in its example, ID_BCA as the documented channel_code example);
// "Corridors, Limits and Processing Time of Remittance Payout",
// https://docs.xendit.co/remittances/corridors (ID_BCA, ID_MANDIRI,
// ID_CIMB, ID_DANAMON, ID_PERMATA); "Payout Webhook" (ID_BCA). The
// remaining codes follow the documented ID_<BANK> convention and are not
// confirmed by a document read here: ID_BRI, ID_BNI, ID_BTN, ID_JAGO,
// ID_SEABANK, ID_BNC (Bank Neo Commerce), ID_OCBC, ID_MAYBANK and the
// e-wallets ID_DANA, ID_GOPAY, ID_OVO, ID_LINKAJA, ID_SHOPEEPAY. A wrong
// guess cannot misroute money: Banks lists only the codes GET
// /payouts_channels answers, and a channel Xendit does not know is refused
// at create (CHANNEL_CODE_NOT_SUPPORTED_ERROR, a rejection).
var channelCodes = map[string]string{
	"bca":       "ID_BCA",
	"bri":       "ID_BRI",
	"bni":       "ID_BNI",
	"mandiri":   "ID_MANDIRI",
	"cimb":      "ID_CIMB",
	"permata":   "ID_PERMATA",
	"bsi":       "ID_BSI",
	"danamon":   "ID_DANAMON",
	"btn":       "ID_BTN",
	"jago":      "ID_JAGO",
	"seabank":   "ID_SEABANK",
	"neo":       "ID_BNC",
	"ocbc":      "ID_OCBC",
	"maybank":   "ID_MAYBANK",
	"dana":      "ID_DANA",
	"gopay":     "ID_GOPAY",
	"ovo":       "ID_OVO",
	"linkaja":   "ID_LINKAJA",
	"shopeepay": "ID_SHOPEEPAY",
}

// bankCodes is channelCodes reversed.
var bankCodes = func() map[string]string {
	m := make(map[string]string, len(channelCodes))
	for b, c := range channelCodes {
		m[c] = b
	}
	return m
}()

// ChannelCode returns the Xendit channel code of one of our bank codes
// (case-insensitive), and whether there is one.
func ChannelCode(bankCode string) (string, bool) {
	c, ok := channelCodes[strings.ToLower(strings.TrimSpace(bankCode))]
	return c, ok
}

// BankCode returns our bank code for a Xendit channel code, and whether
// there is one.
func BankCode(channelCode string) (string, bool) {
	b, ok := bankCodes[channelCode]
	return b, ok
}

// Transfer types the adapter offers. Xendit picks the rail of an IDR payout
// itself ("Local Rails", limit 250,000,000 per transaction, "Indonesia"
// coverage page, https://docs.xendit.co/docs/payouts-indonesia); the
// merchant's transfer type only decides our fee. Banks take BIFAST and
// RTOL; e-wallets BIFAST, as on simwallet.
var (
	bankTransferTypes    = []models.TransferType{models.BIFAST, models.RTOL}
	ewalletTransferTypes = []models.TransferType{models.BIFAST}
)
