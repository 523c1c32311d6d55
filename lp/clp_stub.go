//go:build !cgo || !clp

package lp

import "context"

// clpAvailable reports whether the CLP backend is compiled in.
const clpAvailable = false

// defaultBackend is the backend that Settings.Backend Default selects.
const defaultBackend = PureGo

// clpModel is never built without cgo; resolveSettings refuses CLP first.
type clpModel struct{}

func newCLPModel(*Model) (*clpModel, error) { return nil, ErrBackendUnavailable }

func (*clpModel) addRows(*Model, int) error { return ErrBackendUnavailable }

func (*clpModel) setBounds(*Model, int) error { return ErrBackendUnavailable }

func (*clpModel) setObjective(*Model) error { return ErrBackendUnavailable }

func (*clpModel) dropRows([]Row) []Row { return nil }

func (*clpModel) close() {}

func (*clpModel) runAbandonable(context.Context, Settings, bool, func()) (*Solution, error) {
	return nil, ErrBackendUnavailable
}

func solveCLP(context.Context, *Model, Settings) (*Solution, error) {
	return nil, ErrBackendUnavailable
}

func (*clpModel) emptyRowInfeasible() bool { return false }

func (*clpModel) hint(*Model) bool { return false }
