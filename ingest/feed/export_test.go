package feed

// Reasons returns every Reason, for the tests that check each is reachable.
func Reasons() []Reason {
	return []Reason{
		ReasonMissingField, ReasonBadNumber, ReasonBadURL, ReasonBadSize,
		ReasonNegativePrice, ReasonBadPrice, ReasonUnknownCurrency, ReasonBadUTF8,
		ReasonFieldTooLong, ReasonWrongColumnCount, ReasonTruncatedLine,
		ReasonLineTooLong, ReasonBadJSON, ReasonBadBool, ReasonBadTime, ReasonBadOp,
		ReasonSaleAbovePrice, ReasonBadQuote,
	}
}
