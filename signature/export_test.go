package signature

// Version is the scheme the header is verified by: "v2" when it carries a
// v2 signature (a v1 beside it is then ignored), else "v1".
func (h Header) Version() string {
	if h.V2 != "" {
		return "v2"
	}
	return "v1"
}
