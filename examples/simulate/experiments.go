package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gpufair/gpufair/sim"
)

func loadSweep(ctx context.Context, cfg *config, w io.Writer) error { return fmt.Errorf("not yet") }

func placement(ctx context.Context, cfg *config, w io.Writer) error { return fmt.Errorf("not yet") }

var _ = sim.Run
