package kafkasink_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/kafkasink"
)

// brokers are a real cluster's (RTBD_KAFKA_BROKERS) or a kfake cluster's
// started for the test.
func brokers(t *testing.T) []string {
	t.Helper()
	if b := os.Getenv("RTBD_KAFKA_BROKERS"); b != "" {
		return strings.Split(b, ",")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// consume reads every message of topic until want are read or 20s pass.
func consume(t *testing.T, bs []string, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// TestKafkaSink: records go to the topic of their kind, keyed by nonce,
// with the documented JSON value; charges are acknowledged synchronously
// and report their last seq as durable.
func TestKafkaSink(t *testing.T) {
	bs := brokers(t)
	prefix := "rtbdtest" + time.Now().Format("150405.000000") + "."
	m, err := records.NewMetrics(prometheus.NewRegistry(), nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s, err := kafkasink.Open(kafkasink.Options{Brokers: bs, TopicPrefix: prefix, ClientID: "test", Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 14, 9, 58, 1, 123456000, time.UTC)
	var bids []records.Record
	for i := range 10 {
		r := records.Record{Kind: records.KindBid, Time: at, Instance: "b1", CampaignID: "c1", Format: "300x250",
			PriceMicros: 1_250_000, Currency: "EUR", Products: []int64{1, 2}}
		r.Nonce[15] = byte(i)
		bids = append(bids, r)
	}
	s.Write(bids)
	charges := []records.Record{{Kind: records.KindCharge, Time: at, Instance: "b1", CampaignID: "c1", SpendMicros: 1250, Seq: 7},
		{Kind: records.KindCharge, Time: at, Instance: "b1", CampaignID: "c1", SpendMicros: 1250, Seq: 9}}
	charges[0].Nonce[15], charges[1].Nonce[15] = 1, 2
	d, err := s.WriteCharges(charges)
	if err != nil || d != 9 {
		t.Fatalf("WriteCharges: durable %d, %v; want 9", d, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := consume(t, bs, prefix+"bid", 10)
	if len(got) != 10 {
		t.Fatalf("%d bid messages, want 10", len(got))
	}
	var row map[string]any
	if err := json.Unmarshal(got[0].Value, &row); err != nil {
		t.Fatal(err)
	}
	if len(got[0].Key) != 32 || row["nonce"] != string(got[0].Key) || row["ts"] != "2026-03-14T09:58:01.123456Z" ||
		row["price_micros"] != float64(1_250_000) || row["format"] != "300x250" || row["currency"] != "EUR" {
		t.Errorf("message key %q value %s", got[0].Key, got[0].Value)
	}
	ch := consume(t, bs, prefix+"charge", 2)
	if len(ch) != 2 || !strings.Contains(string(ch[1].Value), `"spend_micros":1250`) {
		t.Fatalf("charge messages %d: %v", len(ch), ch)
	}
}
