package user

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// ErrClosed is returned by every call of a store (and of its bulk
// writer) after the store is closed.
var ErrClosed = errors.New("user: closed")

// ConflictBackoff is the wait of a shared store's optimistic
// read-modify-write before retry attempt (0: none): a random while that
// grows with attempt, cut short by ctx (whose error it returns).
func ConflictBackoff(ctx context.Context, attempt int) error {
	if attempt <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(rand.Int64N(int64(attempt) * int64(200*time.Microsecond))))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// CheckPut is what every store's Put checks before writing p as uid's
// profile: CheckUID, then p.Validate with the store's limits (that error
// names uid).
func CheckPut(uid string, p *Profile, lim Limits) error {
	if err := CheckUID(uid); err != nil {
		return err
	}
	if err := p.Validate(lim); err != nil {
		return fmt.Errorf("uid %q: %w", uid, err)
	}
	return nil
}
