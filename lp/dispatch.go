package lp

import "context"

// solve is replaced by the backend dispatch.
func solve(ctx context.Context, m *Model, s *Settings) (*Solution, error) {
	return nil, ErrBackendUnavailable
}
