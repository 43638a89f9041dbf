// Package kafkasink sends log-level records to Kafka (franz-go): one topic
// per kind (TopicPrefix + kind: rtbd.records.bid, ...), the record's nonce
// in hex as the message key (so a bid and its notices land on the same
// partition of their topics, in order), and the record as the JSON value
// of records.Row:
//
//	{"ts":"2026-03-14T09:58:01.123456Z","instance":"b1","nonce":"5f...",
//	 "request_id":"...","imp_id":"1","exchange":"default","campaign_id":"c1",
//	 "publisher":"...","domain_or_bundle":"...","format":"300x250",
//	 "country":"FRA","device_type":"phone","price_micros":1250000,
//	 "spend_micros":1250,"value_micros":0,"currency":"EUR","products":[1,2],
//	 "reason":"","m_micros":0,"test":false,"user_id":"","group_id":0,
//	 "product_id":0}
//
// (empty strings and empty products are left out). The producer is
// idempotent and waits for all in-sync replicas (acks=all). Records other
// than charges are produced asynchronously into a bounded buffer and
// dropped (counted) when it is full or the brokers do not take them within
// DeliveryTimeout. Charge records come from the journal's export log and
// are produced synchronously: the exporter's cursor moves only past what
// the brokers acknowledged, so a charge is delivered at least once, and
// again after a crash between the acknowledgement and the cursor's
// commit: consumers deduplicate by (nonce, kind).
package kafkasink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/records"
)

// Options configures Open; zero values are defaults, except Brokers.
type Options struct {
	// Brokers are the seed brokers, host:port (records.kafka.brokers).
	Brokers []string
	// TopicPrefix names each kind's topic: TopicPrefix + kind
	// (records.kafka.topic_prefix).
	TopicPrefix string
	// ClientID names the producer to the brokers (the bidder's instance).
	ClientID string
	// DeliveryTimeout is how long a record may wait for the brokers; a
	// record other than a charge is dropped after it, a charge batch is
	// handed again by the exporter. Default 10s.
	DeliveryTimeout time.Duration
	// BufferBytes bounds the producer's buffer of records other than
	// charges (records.buffer_bytes); past it a record is dropped at once.
	// Default 16 MiB.
	BufferBytes int
	// Metrics counts written and dropped records and failures.
	Metrics *records.Metrics
	// Logger; default zap.NewNop().
	Logger *zap.Logger
}

// Sink is the Kafka sink: a records.Sink and a records.ChargeSink.
type Sink struct {
	opts    Options
	cl, chg *kgo.Client
	m       *records.SinkMetrics
	durable uint64
	// row is Write's (the recorder's goroutine), chgRow WriteCharges'
	// (the charge exporter's): the two run concurrently.
	row, chgRow records.Row
}

// Open makes the producers (connections are made lazily: a broker down at
// start is an outage like any other).
func Open(o Options) (*Sink, error) {
	if len(o.Brokers) == 0 {
		return nil, errors.New("kafkasink: no brokers")
	}
	if o.DeliveryTimeout <= 0 {
		o.DeliveryTimeout = 10 * time.Second
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = 16 << 20
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	common := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()), // with the idempotent producer (franz-go's default)
		kgo.RecordDeliveryTimeout(o.DeliveryTimeout),
		// A hung broker (no answer at all) fails a request within the
		// delivery timeout too, so its records are failed on time.
		kgo.ProduceRequestTimeout(o.DeliveryTimeout),
		kgo.RequestTimeoutOverhead(o.DeliveryTimeout),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.AllowAutoTopicCreation(),
	}
	if o.ClientID != "" {
		common = append(common, kgo.ClientID(o.ClientID))
	}
	cl, err := kgo.NewClient(append(common, kgo.MaxBufferedBytes(o.BufferBytes))...)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: %w", err)
	}
	chg, err := kgo.NewClient(common...)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafkasink: %w", err)
	}
	return &Sink{opts: o, cl: cl, chg: chg, m: o.Metrics.Sink(records.SinkKafka)}, nil
}

// Name is records.SinkKafka.
func (s *Sink) Name() string { return records.SinkKafka }

// Topic is the topic of kind k.
func (s *Sink) Topic(k records.Kind) string { return s.opts.TopicPrefix + k.String() }

// message encodes r through row, a scratch Row of the calling goroutine.
func (s *Sink) message(r *records.Record, row *records.Row) (*kgo.Record, error) {
	r.ToRow(row)
	v, err := json.Marshal(row)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: s.Topic(r.Kind), Key: []byte(r.Nonce.String()), Value: v}, nil
}

// Write produces recs asynchronously; a record the buffer cannot take or
// the brokers do not acknowledge within DeliveryTimeout is dropped and
// counted.
func (s *Sink) Write(recs []records.Record) {
	for i := range recs {
		k := recs[i].Kind
		kr, err := s.message(&recs[i], &s.row)
		if err != nil {
			s.m.Dropped(k, 1)
			s.m.Fail(err)
			continue
		}
		s.cl.TryProduce(context.Background(), kr, func(_ *kgo.Record, err error) {
			if err != nil {
				s.m.Dropped(k, 1)
				s.m.Fail(fmt.Errorf("kafkasink: %w", err))
				return
			}
			s.m.Written(k, 1)
		})
	}
}

// Tick does nothing: the producer flushes on its own (linger 5ms).
func (s *Sink) Tick(time.Time) {}

// WriteCharges produces recs and waits for the brokers' acknowledgement
// of every one: then they are all durable.
func (s *Sink) WriteCharges(recs []records.Record) (uint64, error) {
	krs := make([]*kgo.Record, 0, len(recs))
	for i := range recs {
		kr, err := s.message(&recs[i], &s.chgRow)
		if err != nil {
			return s.durable, err
		}
		krs = append(krs, kr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.opts.DeliveryTimeout)
	defer cancel()
	if err := s.chg.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		return s.durable, fmt.Errorf("kafkasink: charges: %w", err)
	}
	s.m.Written(records.KindCharge, len(recs))
	s.durable = recs[len(recs)-1].Seq
	return s.durable, nil
}

// SyncCharges returns the last acknowledged seq: charges are produced
// synchronously, nothing waits.
func (s *Sink) SyncCharges(time.Time, bool) (uint64, error) { return s.durable, nil }

// Close flushes the buffered records (for up to DeliveryTimeout) and
// closes the producers.
func (s *Sink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.DeliveryTimeout)
	defer cancel()
	err := s.cl.Flush(ctx)
	s.cl.Close()
	s.chg.Close()
	if err != nil {
		return fmt.Errorf("kafkasink: flush at close: %w", err)
	}
	return nil
}
