package creative

// AppendDSALabel appends the EU Digital Services Act notice an ad renders
// itself when the publisher cannot: "On behalf of BEHALF, paid by PAID"
// (plain text: Banner and Native escape it). It makes no allocation
// beyond growing dst.
func AppendDSALabel(dst []byte, behalf, paid string) []byte {
	dst = append(dst, "On behalf of "...)
	dst = append(dst, behalf...)
	dst = append(dst, ", paid by "...)
	return append(dst, paid...)
}
