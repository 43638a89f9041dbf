package pgsource

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"

	"github.com/rtbd/rtbd/bidder/campaign"
)

// Document returns the spec column of a campaign: its Spec as a JSON
// object with the campaigns file's keys (the id included).
func Document(s campaign.Spec) ([]byte, error) {
	// Through YAML: Spec's keys are its yaml tags.
	y, err := yaml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("pgsource: document of %q: %w", s.ID, err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(y, &m); err != nil {
		return nil, fmt.Errorf("pgsource: document of %q: %w", s.ID, err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("pgsource: document of %q: %w", s.ID, err)
	}
	return b, nil
}

// Load creates the campaigns table of the database at dsn if absent
// (Schema) and writes specs into it, enabled, replacing rows of the same
// ids, in one transaction (for tests and `rtbd gen`).
func Load(ctx context.Context, dsn string, specs []campaign.Spec) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConnect, err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgsource: load: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit a no-op
	if _, err := tx.Exec(ctx, Schema); err != nil {
		return fmt.Errorf("pgsource: load: schema: %w", err)
	}
	for _, s := range specs {
		doc, err := Document(s)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+Table+` (id, enabled, spec) VALUES ($1, true, $2::jsonb)
			ON CONFLICT (id) DO UPDATE SET enabled = true, spec = EXCLUDED.spec, updated_at = now()`, s.ID, string(doc)); err != nil {
			return fmt.Errorf("pgsource: load %q: %w", s.ID, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgsource: load: %w", err)
	}
	return nil
}
