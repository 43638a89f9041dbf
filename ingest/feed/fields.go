package feed

import (
	"github.com/rtbd/rtbd/catalog/catalogpb"
	"github.com/rtbd/rtbd/rtb/money"
)

// Field ids, in the order rows are validated (and errors reported).
const (
	fOp = iota
	fDeleted
	fID
	fGroupID
	fTitle
	fDescription
	fImageURL
	fWidth
	fHeight
	fLandingURL
	fPrice
	fSalePrice
	fCurrency
	fCategory
	fBrand
	fInStock
	fUpdatedAt
	numFields
)

// fieldNames are the column / key names, indexed by field id.
var fieldNames = [numFields]string{
	fOp: "op", fDeleted: "deleted", fID: "id", fGroupID: "group_id",
	fTitle: "title", fDescription: "description", fImageURL: "image_url",
	fWidth: "width", fHeight: "height", fLandingURL: "landing_url",
	fPrice: "price", fSalePrice: "sale_price", fCurrency: "currency",
	fCategory: "category", fBrand: "brand", fInStock: "in_stock",
	fUpdatedAt: "updated_at",
}

// requiredForUpsert are the fields every upsert row needs.
var requiredForUpsert = [...]int{fID, fGroupID, fTitle, fImageURL, fWidth, fHeight, fLandingURL, fPrice, fCurrency}

// lookupField returns the field id for an exact (lowercase) name, or -1.
func lookupField(name []byte) int {
	switch string(name) {
	case "op":
		return fOp
	case "deleted":
		return fDeleted
	case "id":
		return fID
	case "group_id":
		return fGroupID
	case "title":
		return fTitle
	case "description":
		return fDescription
	case "image_url":
		return fImageURL
	case "width":
		return fWidth
	case "height":
		return fHeight
	case "landing_url":
		return fLandingURL
	case "price":
		return fPrice
	case "sale_price":
		return fSalePrice
	case "currency":
		return fCurrency
	case "category":
		return fCategory
	case "brand":
		return fBrand
	case "in_stock":
		return fInStock
	case "updated_at":
		return fUpdatedAt
	}
	return -1
}

// kind is the JSON type of a value (CSV values are all kString).
type kind uint8

const (
	kAbsent kind = iota
	kString
	kNumber
	kBool
	kNull
	kComposite // object or array
)

// value is one field's raw bytes as found in the row (a CSV cell, a JSON
// string's unescaped contents, or a JSON literal's text).
type value struct {
	b []byte
	k kind
}

// present returns the bytes (trimmed by build) and whether the field
// counts as given.
func (v value) present() ([]byte, bool) {
	if v.k == kAbsent || v.k == kNull {
		return nil, false
	}
	return v.b, len(v.b) > 0
}

// fieldError is a validation failure: field id (or -1), reason, message and
// the offending value.
type fieldError struct {
	field  int
	reason Reason
	msg    string
	val    []byte
}

func (fe *fieldError) set(field int, reason Reason, msg string, val []byte) bool {
	fe.field, fe.reason, fe.msg, fe.val = field, reason, msg, val
	return false
}

const (
	msgWantString  = "want a JSON string"
	msgWantInteger = "want an integer"
	msgWantDecimal = "want a decimal number"
)

// stringField returns field f, which must be a JSON string (any CSV cell
// is) that check accepts; on failure it fills fe.
func stringField(vals *[numFields]value, fe *fieldError, f int, check func([]byte) (Reason, string)) ([]byte, bool) {
	b, _ := vals[f].present()
	if vals[f].k != kString {
		return nil, fe.set(f, ReasonBadJSON, msgWantString, b)
	}
	if reason, msg := check(b); reason != "" {
		return nil, fe.set(f, reason, msg, b)
	}
	return b, true
}

// The text fields' checks, for stringField.
func checkTitle(b []byte) (Reason, string)       { return checkText(b, maxTitleBytes, false) }
func checkDescription(b []byte) (Reason, string) { return checkText(b, maxDescriptionBytes, true) }
func checkShortText(b []byte) (Reason, string)   { return checkText(b, maxShortTextBytes, false) }

// numberField parses field f, which must be a JSON string or number, with
// parse; on failure it fills fe, with reason notNumber and message want
// for any other JSON type.
func numberField[T any](vals *[numFields]value, fe *fieldError, f int, notNumber Reason, want string, parse func([]byte) (T, Reason, string)) (T, bool) {
	b, _ := vals[f].present()
	if k := vals[f].k; k != kString && k != kNumber {
		var zero T
		return zero, fe.set(f, notNumber, want, b)
	}
	v, reason, msg := parse(b)
	if reason != "" {
		return v, fe.set(f, reason, msg, b)
	}
	return v, true
}

// build validates vals into row. On failure it fills fe and returns false;
// row.Product is then unspecified. sbuf is scratch reused across rows; the
// row's text fields end up in one new string.
func build(row *Row, vals *[numFields]value, sbuf *[]byte, lastCur *string, fe *fieldError) bool {
	row.Product = catalogpb.Product{}
	row.Delete = false
	p := &row.Product
	for i := range vals {
		vals[i].b = trimSpace(vals[i].b)
	}

	// op / deleted decide which fields are needed.
	opSet, opDelete := false, false
	if b, ok := vals[fOp].present(); ok {
		switch {
		case vals[fOp].k != kString:
			return fe.set(fOp, ReasonBadOp, "want \"upsert\" or \"delete\"", b)
		case equalFold(b, "upsert"):
		case equalFold(b, "delete"):
			opDelete = true
		default:
			return fe.set(fOp, ReasonBadOp, "want \"upsert\" or \"delete\"", b)
		}
		opSet = true
	}
	del := opDelete
	if b, ok := vals[fDeleted].present(); ok {
		d, ok := boolValue(vals[fDeleted].k, b)
		if !ok {
			return fe.set(fDeleted, ReasonBadBool, "want true/false, 1/0 or yes/no", b)
		}
		if opSet && d != opDelete {
			return fe.set(fOp, ReasonBadOp, "op and deleted disagree", b)
		}
		del = d
	}

	var ok bool
	ids := [2]*int64{&p.ProductId, &p.ProductGroupId}
	for i, f := range [2]int{fID, fGroupID} {
		if _, given := vals[f].present(); !given {
			return fe.set(f, ReasonMissingField, "required", nil)
		}
		if *ids[i], ok = numberField(vals, fe, f, ReasonBadNumber, msgWantInteger, parseID); !ok {
			return false
		}
	}
	if del {
		row.Delete = true
		return true
	}

	// Required fields first, so a row missing several says "missing_field"
	// for the first in the documented order.
	var text [6][]byte // title, image_url, landing_url, category, brand, description
	for _, f := range requiredForUpsert {
		if _, ok := vals[f].present(); !ok {
			return fe.set(f, ReasonMissingField, "required", nil)
		}
	}

	// title, description
	if text[0], ok = stringField(vals, fe, fTitle, checkTitle); !ok {
		return false
	}
	if _, given := vals[fDescription].present(); given {
		if text[5], ok = stringField(vals, fe, fDescription, checkDescription); !ok {
			return false
		}
	}

	// URLs and sizes, in field order.
	if text[1], ok = stringField(vals, fe, fImageURL, checkURL); !ok {
		return false
	}
	if p.Width, ok = numberField(vals, fe, fWidth, ReasonBadNumber, msgWantInteger, parsePixels); !ok {
		return false
	}
	if p.Height, ok = numberField(vals, fe, fHeight, ReasonBadNumber, msgWantInteger, parsePixels); !ok {
		return false
	}
	if text[2], ok = stringField(vals, fe, fLandingURL, checkURL); !ok {
		return false
	}

	// price, sale_price
	if p.PriceMicros, ok = numberField(vals, fe, fPrice, ReasonBadPrice, msgWantDecimal, parsePrice); !ok {
		return false
	}
	if b, given := vals[fSalePrice].present(); given {
		sale, ok := numberField(vals, fe, fSalePrice, ReasonBadPrice, msgWantDecimal, parsePrice)
		if !ok {
			return false
		}
		if sale > p.PriceMicros {
			return fe.set(fSalePrice, ReasonSaleAbovePrice, "sale_price is above price", b)
		}
		p.SalePriceMicros = sale
	}

	// currency
	b, _ := vals[fCurrency].present()
	if vals[fCurrency].k != kString {
		return fe.set(fCurrency, ReasonBadJSON, msgWantString, b)
	}
	if string(b) == *lastCur { // feeds are mostly in one currency
		p.Currency = *lastCur
	} else {
		cur, ok := money.Code(b)
		if !ok {
			return fe.set(fCurrency, ReasonUnknownCurrency, "not an ISO 4217 code in the list", b)
		}
		p.Currency = cur
		if string(b) == cur {
			*lastCur = cur
		}
	}

	// category, brand
	for i, f := range [2]int{fCategory, fBrand} {
		if _, given := vals[f].present(); given {
			if text[3+i], ok = stringField(vals, fe, f, checkShortText); !ok {
				return false
			}
		}
	}

	// in_stock
	p.InStock = true
	if b, ok := vals[fInStock].present(); ok {
		v, ok := boolValue(vals[fInStock].k, b)
		if !ok {
			return fe.set(fInStock, ReasonBadBool, "want true/false, 1/0, yes/no or in stock/out of stock", b)
		}
		p.InStock = v
	}

	// updated_at
	if _, given := vals[fUpdatedAt].present(); given {
		if p.UpdatedAt, ok = numberField(vals, fe, fUpdatedAt, ReasonBadTime, "want unix seconds or an RFC 3339 string", parseTime); !ok {
			return false
		}
	}

	// One allocation for all text of the row.
	buf := (*sbuf)[:0]
	var ends [6]int
	for i, t := range text {
		buf = append(buf, t...)
		ends[i] = len(buf)
	}
	*sbuf = buf
	s := string(buf)
	p.Title = s[:ends[0]]
	p.ImageUrl = s[ends[0]:ends[1]]
	p.LandingUrl = s[ends[1]:ends[2]]
	p.Category = s[ends[2]:ends[3]]
	p.Brand = s[ends[3]:ends[4]]
	p.Description = s[ends[4]:ends[5]]
	return true
}

// boolValue reads a boolean from a JSON bool, a 0/1 number or a string.
func boolValue(k kind, b []byte) (bool, bool) {
	switch k {
	case kBool, kNumber, kString:
		return parseBool(b)
	}
	return false, false
}
