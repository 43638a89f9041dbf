package user

// MatchKey appends the match table key of an exchange's own user id to
// dst: exchange + ":" + xuid. /match writes it, the bid path reads it for a
// request of that exchange without user.buyeruid. The key must pass
// CheckUID (at most MaxUIDLen bytes) to be stored.
func MatchKey[T string | []byte](dst []byte, exchange string, xuid T) []byte {
	dst = append(dst, exchange...)
	dst = append(dst, ':')
	return append(dst, xuid...)
}
