// Package money is rtbd's one representation of amounts of money: int64
// micros (millionths of the currency unit, so 1.25 USD is 1250000), with
// ISO 4217 currency codes beside them. Every package that reads, writes or
// converts an amount does it here: campaign bids and budgets, floors and
// prices from OpenRTB, win and billing notices, product prices in feeds and
// creatives, and conversion between currencies. It imports nothing of rtbd,
// so every layer can use it.
//
// # Text
//
// Parse reads a plain decimal such as "19.99" exactly, without floating
// point. The one grammar: ASCII digits, then optionally "." and at least one
// digit; at most 12 integer digits (leading zeros aside), at most 6
// decimals, at most 32 bytes. Signs other than a leading "-" (reported as
// ErrNegative by Parse, accepted by ParseSigned), exponents, spaces,
// separators, ".5" and "5." are rejected. So the largest amount text can
// hold is MaxText, 999999999999.999999. Errors are the sentinels below,
// without allocation; callers turn them into their own messages (a feed's
// reject reason, a campaign file's problem). Append and Format write the
// same grammar back (no trailing zeros) and AppendDisplay writes an amount
// for people: "$12.50", "¥1,980".
//
// # Floats
//
// OpenRTB carries floors and prices as float64 currency units. FromFloat
// reads such a float as the decimal it was written as (the shortest decimal
// that gives the same float) and rounds it up to the micro, so a floor in
// micros is never below the floor the exchange sent and a bid that meets
// one meets the other. Float is the way back. Scale multiplies an amount by
// a factor (a bid multiplier), rounding half away from zero.
//
// One saturation rule holds for every conversion that goes through a
// float (FromFloat, Scale, Rates.Convert, Rates.ConvertUp): the result is
// in 0..Max; NaN and amounts <= 0 give 0, amounts at or above 2^63 micros
// (and +Inf) give Max. Max is above MaxText, so a saturated floor is above
// every amount a campaign can bid.
//
// # Currencies
//
// Code looks a code up in the ISO 4217 list of active currencies
// (case-insensitively, for outside input) and returns its canonical
// upper-case form; IsCode is the strict check for configuration, campaigns
// and signed tokens (upper case, in the list). Rates converts between
// currencies given US dollar rates; see Rates.Convert for its rounding.
// Pairs holds pairwise rates as Prebid writes them (a bid request's
// ext.prebid.currency.rates, a currency file's conversions) and looks a
// pair up direct, inverse, then through one intermediate currency, as
// Prebid Server does; ParseFXFile reads Prebid's currency file, and
// Rates.WithPairs turns its rates into US dollar rates.
//
// # Hot path
//
// Parse, ParseSigned, Append, AppendDisplay, FromFloat, Float, Scale,
// PerImpression, Code, IsCode, Rates.Known, Rates.Convert and
// Rates.ConvertUp make no allocation and are safe for concurrent use;
// Pairs.Add (within the memory a reused Pairs has), Pairs.Rate,
// Pairs.Convert and Pairs.ConvertUp make no allocation either.
package money
