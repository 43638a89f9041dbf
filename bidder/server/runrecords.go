package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/rtbd/rtbd/bidder/spend/journal"
	"github.com/rtbd/rtbd/configs"
	"github.com/rtbd/rtbd/records"
	"github.com/rtbd/rtbd/records/filesink"
	"github.com/rtbd/rtbd/records/kafkasink"
)

// recordsRun is the records part of a bidder process: the sinks
// (records.files, records.kafka.brokers), the Recorder the bid path hands
// records to, and one charge exporter per sink reading the journal's
// export log.
type recordsRun struct {
	m      *records.Metrics
	sinks  []records.Sink
	charge []records.ChargeSink
	rec    *records.Recorder
	cancel context.CancelFunc
	wg     sync.WaitGroup
	log    *zap.Logger
}

// openRecords opens the configured sinks (none: nil, records off).
func openRecords(cfg *configs.Config, instance string, log *zap.Logger, reg prometheus.Registerer) (*recordsRun, error) {
	rc := cfg.Records
	if !rc.Files && rc.Kafka.Brokers == "" {
		return nil, nil
	}
	m, err := records.NewMetrics(reg, log, time.Minute)
	if err != nil {
		return nil, fmt.Errorf("bidder: records metrics: %w", err)
	}
	rr := &recordsRun{m: m, log: log}
	if rc.Files {
		fo := fileSinkOptions(cfg, instance)
		fo.Metrics, fo.Logger = m, log
		fs, err := filesink.Open(fo)
		if err != nil {
			return nil, fmt.Errorf("bidder: records.dir %s: %w", cfg.RecordsDir(), err)
		}
		rr.sinks, rr.charge = append(rr.sinks, fs), append(rr.charge, fs)
	}
	if rc.Kafka.Brokers != "" {
		ks, err := openKafkaSink(cfg, instance, m, log)
		if err != nil {
			rr.closeSinks()
			return nil, err
		}
		rr.sinks, rr.charge = append(rr.sinks, ks), append(rr.charge, ks)
	}
	ro := recorderOptions(cfg, instance)
	ro.Metrics, ro.Logger = m, log
	rr.rec, err = records.NewRecorder(ro, rr.sinks...)
	if err != nil {
		rr.closeSinks()
		return nil, fmt.Errorf("bidder: records: %w", err)
	}
	return rr, nil
}

// journalOptions adds the export log's settings to o.
func (rr *recordsRun) journalOptions(cfg *configs.Config, o *journal.Options) {
	if rr == nil {
		return
	}
	for _, s := range rr.charge {
		o.Exporters = append(o.Exporters, s.Name())
	}
	o.MaxExport = cfg.Records.ChargeMaxPending
	dropped := rr.m.Sink(records.SinkJournal)
	o.ExportDropped = func() { dropped.Dropped(records.KindCharge, 1) }
}

// startExport starts one charge exporter per sink on j's export log.
func (rr *recordsRun) startExport(j *journal.Journal) {
	if rr == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	rr.cancel = cancel
	for _, s := range rr.charge {
		rr.wg.Add(1)
		go func() {
			defer rr.wg.Done()
			if err := records.ExportCharges(ctx, j, s, records.ExportOptions{Metrics: rr.m}); err != nil {
				rr.log.Error("records: charge exporter stopped", zap.String("sink", s.Name()), zap.Error(err))
			}
		}()
	}
}

// recorder is the Recorder (nil when records are off).
func (rr *recordsRun) recorder() *records.Recorder {
	if rr == nil {
		return nil
	}
	return rr.rec
}

// close stops the exporters (each completes and commits what it has),
// then the Recorder and its sinks. Call it before the journal closes.
func (rr *recordsRun) close() error {
	if rr == nil {
		return nil
	}
	if rr.cancel != nil {
		rr.cancel()
		rr.wg.Wait()
	}
	if rr.rec != nil {
		return rr.rec.Close() // closes the sinks
	}
	return rr.closeSinks()
}

func (rr *recordsRun) closeSinks() error {
	var errs []error
	for _, s := range rr.sinks {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// openKafkaSink opens the Kafka sink of records.kafka.
func openKafkaSink(cfg *configs.Config, instance string, m *records.Metrics, log *zap.Logger) (*kafkasink.Sink, error) {
	ko := kafkaSinkOptions(cfg, instance)
	ko.Metrics, ko.Logger = m, log
	ks, err := kafkasink.Open(ko)
	if err != nil {
		return nil, fmt.Errorf("bidder: records.kafka.brokers: %w", err)
	}
	return ks, nil
}
