// Package snap is a payout vendor that speaks SNAP BI (Standar Nasional
// Open API Pembayaran, Bank Indonesia) to one bank: the B2B access token,
// the symmetric service signature, external account inquiry, interbank
// transfer and transfer status inquiry. Its simulator is vendors/snap/snapsim.
//
// Documents this package follows (cited again, by short name, on each type,
// function and table that comes from them):
//
//   - [BI-SNAP]: Bank Indonesia, "Standar Nasional Open API Pembayaran",
//     technical and security standard and service specifications, published
//     at https://apimgmt.bi.go.id (service codes 73 access token B2B, 16
//     external account inquiry, 18 interbank transfer, 36 transfer status
//     inquiry; responseCode = HTTP status + service code + case code).
//   - [MT-SIG]: Midtrans, "Signature Generation" (SNAP payouts),
//     https://docs.midtrans.com/reference/signature-generation-payouts
//   - [MT-INQ]: Midtrans, "External Account Inquiry",
//     https://docs.midtrans.com/reference/external-account-inquiry
//   - [MT-XFER]: Midtrans, "Interbank Transfer",
//     https://docs.midtrans.com/reference/interbank-transfer
//   - [MT-STATUS]: Midtrans, "Transfer Status Inquiry",
//     https://docs.midtrans.com/reference/transfer-status-inquiry
//   - [MT-ERR]: Midtrans, "Error Mapping" (SNAP payouts),
//     https://docs.midtrans.com/reference/error-mapping
//   - [MT-ROUTE]: Midtrans, "Bank Transfer" (which route an interbank
//     transfer takes), https://docs.midtrans.com/reference/bank-transfer-api
//   - [DP-CODES]: Durianpay, "Response Code and Response Message" (SNAP),
//     https://docs.durianpay.id/docs/api/snap/response/response-code/
//   - [FP-CODES]: Faspay, SNAP Disbursement "Response Code",
//     https://docs.faspay.co.id/merchant-integration/api-reference-1/snap/snap-disbursement/response-code
//   - [FP-DISB]: Faspay, "SNAP Disbursement" (X-EXTERNAL-ID unique in the
//     same day), https://docs.faspay.co.id/merchant-integration/api-reference-1/snap/snap-disbursement
//   - [DOKU-B2B]: DOKU, "Get Token API B2B",
//     https://developers.doku.com/accept-payments/direct-api/snap/integration-guide/get-token-api/b2b
//   - [NP-CODES]: NICEPAY, "General Response Code and Message - API SNAP",
//     https://docs.nicepay.co.id/nicepay-code-api-snap-general-response
//   - [PM-SIG]: PayerMax, "Guide to Indonesian SNAP Protocol Signature
//     Integration" (the minify rule),
//     https://docs.payermax.com/en/202606-version/developer/SNAP.html
//   - [BNC-NOTIFY]: Bank Neo Commerce, "Disbursement Transfer Result
//     Callback Notification" (SNAP service code 52; X-SIGNATURE
//     SHA256withRSA over method:endpoint:body hash:timestamp; body
//     originalReferenceNo, originalPartnerReferenceNo,
//     latestTransactionStatus, transactionStatusDesc),
//     https://developers.bankneo.co.id/api-docs/article/disbursement-transfer-result-callback-notification
//   - [AYO-DISB]: Ayoconnect, "Disbursement API" (the final result comes
//     by callback or status inquiry, as latestTransactionStatus 00, 03,
//     04 Refunded, 06, 07),
//     https://docs.payments.of.ayoconnect.id/docs/it-v2-disbursement
//   - [FP-SIG]: Faspay, "Signature SNAP" (the asymmetric string to sign),
//     https://docs.faspay.co.id/merchant-integration/api-reference-1/snap/signature-snap
//
// Transfer result notifications (ParseCallback), when the bank is
// configured to send them (Options.Notifications), are verified with the
// bank's public key over the path they came on and a five-minute
// X-TIMESTAMP window, then confirmed with the status inquiry by the
// caller: no notification alone moves money. Without them the status
// inquiry alone tells results and returns.
//
// Secrets (client secret, private key, access tokens) and full account
// numbers are never logged or put in errors: errors name the responseCode,
// the responseMessage and the last four digits of an account at most.
package snap
