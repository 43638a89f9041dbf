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

const msgWantString = "want a JSON string"

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

	for _, f := range [2]int{fID, fGroupID} {
		b, ok := vals[f].present()
		if !ok {
			return fe.set(f, ReasonMissingField, "required", nil)
		}
		if k := vals[f].k; k != kString && k != kNumber {
			return fe.set(f, ReasonBadNumber, "want an integer", b)
		}
		v, reason, msg := parseID(b)
		if reason != "" {
			return fe.set(f, reason, msg, b)
		}
		if f == fID {
			p.ProductId = v
		} else {
			p.ProductGroupId = v
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

	// title
	b, _ := vals[fTitle].present()
	if vals[fTitle].k != kString {
		return fe.set(fTitle, ReasonBadJSON, msgWantString, b)
	}
	if reason, msg := checkText(b, maxTitleBytes, false); reason != "" {
		return fe.set(fTitle, reason, msg, b)
	}
	text[0] = b

	// description
	if b, ok := vals[fDescription].present(); ok {
		if vals[fDescription].k != kString {
			return fe.set(fDescription, ReasonBadJSON, msgWantString, b)
		}
		if reason, msg := checkText(b, maxDescriptionBytes, true); reason != "" {
			return fe.set(fDescription, reason, msg, b)
		}
		text[5] = b
	}

	// URLs and sizes, in field order.
	for _, f := range [...]int{fImageURL, fWidth, fHeight, fLandingURL} {
		b, _ := vals[f].present()
		k := vals[f].k
		switch f {
		case fImageURL, fLandingURL:
			if k != kString {
				return fe.set(f, ReasonBadJSON, msgWantString, b)
			}
			if reason, msg := checkURL(b); reason != "" {
				return fe.set(f, reason, msg, b)
			}
			if f == fImageURL {
				text[1] = b
			} else {
				text[2] = b
			}
		default:
			if k != kString && k != kNumber {
				return fe.set(f, ReasonBadNumber, "want an integer", b)
			}
			v, reason, msg := parsePixels(b)
			if reason != "" {
				return fe.set(f, reason, msg, b)
			}
			if f == fWidth {
				p.Width = v
			} else {
				p.Height = v
			}
		}
	}

	// price, sale_price
	b, _ = vals[fPrice].present()
	if k := vals[fPrice].k; k != kString && k != kNumber {
		return fe.set(fPrice, ReasonBadPrice, "want a decimal number", b)
	}
	price, reason, msg := parsePrice(b)
	if reason != "" {
		return fe.set(fPrice, reason, msg, b)
	}
	p.PriceMicros = price
	if b, ok := vals[fSalePrice].present(); ok {
		if k := vals[fSalePrice].k; k != kString && k != kNumber {
			return fe.set(fSalePrice, ReasonBadPrice, "want a decimal number", b)
		}
		sale, reason, msg := parsePrice(b)
		if reason != "" {
			return fe.set(fSalePrice, reason, msg, b)
		}
		if sale > price {
			return fe.set(fSalePrice, ReasonSaleAbovePrice, "sale_price is above price", b)
		}
		p.SalePriceMicros = sale
	}

	// currency
	b, _ = vals[fCurrency].present()
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
		if b, ok := vals[f].present(); ok {
			if vals[f].k != kString {
				return fe.set(f, ReasonBadJSON, msgWantString, b)
			}
			if reason, msg := checkText(b, maxShortTextBytes, false); reason != "" {
				return fe.set(f, reason, msg, b)
			}
			text[3+i] = b
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
	if b, ok := vals[fUpdatedAt].present(); ok {
		if k := vals[fUpdatedAt].k; k != kString && k != kNumber {
			return fe.set(fUpdatedAt, ReasonBadTime, "want unix seconds or an RFC 3339 string", b)
		}
		t, reason, msg := parseTime(b)
		if reason != "" {
			return fe.set(fUpdatedAt, reason, msg, b)
		}
		p.UpdatedAt = t
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
