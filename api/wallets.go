package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

type walletItem struct {
	WalletID string `json:"wallet_id"`
	Name     string `json:"name"`
}

type walletListResponse struct {
	Wallets    []walletItem `json:"wallets"`
	TotalCount int          `json:"total_count"`
}

// balanceResponse: balance is the settled ledger balance; available is
// what a new disbursement may lock (balance - locked). 4 fraction digits.
type balanceResponse struct {
	WalletID  string `json:"wallet_id"`
	Name      string `json:"name"`
	Balance   string `json:"balance"`
	Available string `json:"available"`
	Locked    string `json:"locked"`
	Currency  string `json:"currency"`
}

type bankItem struct {
	Code                   string   `json:"code"`
	Name                   string   `json:"name"`
	Swift                  string   `json:"swift"`
	SupportedTransferTypes []string `json:"supported_transfer_types"`
}

type bankListResponse struct {
	Banks      []bankItem `json:"banks"`
	TotalCount int        `json:"total_count"`
}

// GET /api/v3/wallets: the caller's provisioned wallets.
func (s *Server) handleWalletList(c *gin.Context) {
	p := principalOf(c)
	wallets, err := s.store.ListClientWallets(c.Request.Context(), p.Client.ID)
	if err != nil {
		fail(c, err)
		return
	}
	resp := walletListResponse{Wallets: make([]walletItem, len(wallets)), TotalCount: len(wallets)}
	for i, w := range wallets {
		resp.Wallets[i] = walletItem{WalletID: w.ID.String(), Name: w.Name}
	}
	c.JSON(http.StatusOK, resp)
}

// GET /api/v3/wallets/{wallet_id}/balance
func (s *Server) handleWalletBalance(c *gin.Context) {
	w, ok := s.callerWallet(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, balanceResponse{
		WalletID:  w.ID.String(),
		Name:      w.Name,
		Balance:   w.Balance.Fixed4(),
		Available: w.Available().Fixed4(),
		Locked:    w.Locked.Fixed4(),
		Currency:  "IDR",
	})
}

// GET /api/v3/wallets/{wallet_id}/banks: the wallet's vendor's list.
func (s *Server) handleWalletBanks(c *gin.Context) {
	w, ok := s.callerWallet(c)
	if !ok {
		return
	}
	vendor, err := s.vendors.Get(w.Vendor)
	if err != nil {
		fail(c, err)
		return
	}
	banks, err := s.payouts.Banks(c.Request.Context(), vendor)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toBankList(banks))
}

func toBankList(banks []vendors.Bank) bankListResponse {
	resp := bankListResponse{Banks: make([]bankItem, len(banks)), TotalCount: len(banks)}
	for i, b := range banks {
		types := make([]string, len(b.TransferTypes))
		for j, t := range b.TransferTypes {
			types[j] = string(t)
		}
		resp.Banks[i] = bankItem{Code: b.Code, Name: b.Name, Swift: b.SWIFT, SupportedTransferTypes: types}
	}
	return resp
}

// callerWallet resolves the wallet_id path parameter to a provisioned
// wallet of the caller, answering 400 or 404 itself when it cannot.
func (s *Server) callerWallet(c *gin.Context) (*models.Wallet, bool) {
	id, err := parseUUIDParam(c.Param("wallet_id"), "wallet_id")
	if err != nil {
		fail(c, err)
		return nil, false
	}
	w, err := s.wallets.find(c.Request.Context(), principalOf(c).Client.ID, id)
	if err != nil {
		fail(c, err)
		return nil, false
	}
	return w, true
}

// parseUUIDParam accepts only the canonical 36-character form.
func parseUUIDParam(raw, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 {
		return uuid.Nil, models.Invalid(name + " must be a UUID such as 6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60")
	}
	return id, nil
}
