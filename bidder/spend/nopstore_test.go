package spend

import "context"

// nopStore is a TEST store that accepts everything and returns the deltas
// as totals (no memory of earlier flushes).
type nopStore struct{}

func (nopStore) Flush(_ context.Context, ds []Delta) ([]Total, error) {
	out := make([]Total, len(ds))
	for i, d := range ds {
		out[i] = Total{Campaign: d.Campaign, Day: d.Day, DayMicros: d.Micros, DayImps: d.Imps, TotalMicros: d.Micros, TotalImps: d.Imps}
		for _, f := range d.Freq {
			out[i].Freq = append(out[i].Freq, f.Count)
		}
	}
	return out, nil
}

func (nopStore) Read(_ context.Context, ids []string, day string) ([]Total, error) {
	out := make([]Total, len(ids))
	for i, id := range ids {
		out[i] = Total{Campaign: id, Day: day}
	}
	return out, nil
}
