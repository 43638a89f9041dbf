package records

import (
	"encoding/hex"
	"time"
)

// Row is a record as a Parquet row (and as the JSON value of a Kafka
// message): the columns every kind shares. The kind, date and hour are the
// partition's (kind=K/date=YYYY-MM-DD/hour=HH), not columns of the file;
// the Kafka topic names the kind.
type Row struct {
	TS             time.Time `parquet:"ts,timestamp(microsecond:utc)" json:"ts"`
	Instance       string    `parquet:"instance,dict" json:"instance"`
	Nonce          string    `parquet:"nonce" json:"nonce"`
	RequestID      string    `parquet:"request_id" json:"request_id,omitempty"`
	ImpID          string    `parquet:"imp_id" json:"imp_id,omitempty"`
	Exchange       string    `parquet:"exchange,dict" json:"exchange,omitempty"`
	CampaignID     string    `parquet:"campaign_id,dict" json:"campaign_id,omitempty"`
	Publisher      string    `parquet:"publisher,dict" json:"publisher,omitempty"`
	DomainOrBundle string    `parquet:"domain_or_bundle,dict" json:"domain_or_bundle,omitempty"`
	Format         string    `parquet:"format,dict" json:"format,omitempty"`
	Country        string    `parquet:"country,dict" json:"country,omitempty"`
	DeviceType     string    `parquet:"device_type,dict" json:"device_type,omitempty"`
	PriceMicros    int64     `parquet:"price_micros" json:"price_micros"`
	SpendMicros    int64     `parquet:"spend_micros" json:"spend_micros"`
	ValueMicros    int64     `parquet:"value_micros" json:"value_micros"`
	Currency       string    `parquet:"currency,dict" json:"currency,omitempty"`
	Products       []int64   `parquet:"products,list" json:"products,omitempty"`
	Reason         string    `parquet:"reason,dict" json:"reason,omitempty"`
	MMicros        int64     `parquet:"m_micros" json:"m_micros"`
	Test           bool      `parquet:"test" json:"test"`
	UserID         string    `parquet:"user_id" json:"user_id,omitempty"`
	GroupID        int64     `parquet:"group_id" json:"group_id"`
	ProductID      int64     `parquet:"product_id" json:"product_id"`
}

// ToRow fills row from r (row's Products reuses its capacity).
func (r *Record) ToRow(row *Row) {
	ps := append(row.Products[:0], r.Products...)
	*row = Row{
		TS: r.Time.UTC().Truncate(time.Microsecond), Instance: r.Instance, Nonce: r.Nonce.String(),
		RequestID: r.RequestID, ImpID: r.ImpID, Exchange: r.Exchange, CampaignID: r.CampaignID,
		Publisher: r.Publisher, DomainOrBundle: r.DomainOrBundle, Format: r.Format, Country: r.Country,
		DeviceType: r.DeviceType, PriceMicros: r.PriceMicros, SpendMicros: r.SpendMicros,
		ValueMicros: r.ValueMicros, Currency: r.Currency, Products: ps, Reason: r.Reason,
		MMicros: r.MMicros, Test: r.Test, UserID: r.UserID, GroupID: r.GroupID, ProductID: r.ProductID,
	}
}

// FromRow fills r from row of kind k. A nonce that is not 32 hex digits is
// left zero.
func (r *Record) FromRow(k Kind, row *Row) {
	*r = Record{
		Kind: k, Time: row.TS.UTC(), Instance: row.Instance,
		RequestID: row.RequestID, ImpID: row.ImpID, Exchange: row.Exchange, CampaignID: row.CampaignID,
		Publisher: row.Publisher, DomainOrBundle: row.DomainOrBundle, Format: row.Format, Country: row.Country,
		DeviceType: row.DeviceType, PriceMicros: row.PriceMicros, SpendMicros: row.SpendMicros,
		ValueMicros: row.ValueMicros, Currency: row.Currency, Products: row.Products, Reason: row.Reason,
		MMicros: row.MMicros, Test: row.Test, UserID: row.UserID, GroupID: row.GroupID, ProductID: row.ProductID,
	}
	if len(row.Nonce) == 32 {
		_, _ = hex.Decode(r.Nonce[:], []byte(row.Nonce))
	}
}
