# gpufair: two entry points.
#   make demo   runs the main demonstration (examples/quickstart)
#   make test   runs gofmt, go vet and staticcheck, then the whole test suite, with CLP
#               (-tags clp, cgo) and again pure Go (the default LP backend, built with cgo
#               off), the race detector over the code that runs goroutines (agents' calls,
#               solves a deadline abandons), and each fuzz target briefly
#   make fuzz   runs each fuzz target for FUZZTIME (1m)
#   make reproduce  runs every paper's evaluation in full (docs/reproduction.md; long)
GO ?= go
# CLP is compiled in with the clp build tag (and cgo); without it the LPs
# are solved by lp.PureGo. The tests run both; the reproductions and
# benchmarks use CLP, with which docs/reproduction.md's numbers were made.
CLP = -tags clp
export PATH := $(PATH):/usr/local/go/bin

.PHONY: demo test deps lint bench soak fuzz fuzz-run reproduce reproduce-gavel reproduce-oef reproduce-gandiva-fair reproduce-themis reproduce-profile-noise

deps:
	@sh scripts/deps.sh

demo: deps
	$(GO) run ./examples/quickstart

# staticcheck runs on the clp build, which compiles every file the pure-Go
# build does but the CLP stub (whose methods only satisfy an interface).
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: deps
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(CLP) ./...
	CGO_ENABLED=0 $(GO) vet ./...
	$(GO) run $(STATICCHECK) $(CLP) ./...

test: lint
	$(GO) test $(CLP) -count=1 ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./...
	$(GO) test -race -short -count=1 ./auction
	$(GO) test $(CLP) -race -count=1 -run '^TestStoppedSolveLeavesModel$$' ./lp
	@$(MAKE) --no-print-directory fuzz-run FUZZFOR=$(FUZZSMOKE)

# Every fuzz target, as package:Name. make test runs each for FUZZSMOKE;
# make fuzz runs each for FUZZTIME.
FUZZ_TARGETS = ./lp:FuzzSolve ./alloc:FuzzPolicies ./alloc:FuzzAudit ./alloc:FuzzOEFWarm \
	./speedup:FuzzNew ./speedup:FuzzNormalise ./topology:FuzzPlacer ./data:FuzzLoadThroughputs ./data:FuzzLoadMeasured \
	./ftf:FuzzRho ./sim:FuzzRun ./sim:FuzzReadTrace ./auction:FuzzProportionalFair \
	./trade:FuzzMarket ./stride:FuzzReadjust ./examples/allocate:FuzzRequest \
	./examples/simulate:FuzzRestore ./examples/simulate:FuzzRestoreValues ./examples/simulate:FuzzEvents \
	./gpu:FuzzProbe ./gpu:FuzzReplay
# The smoke run counts inputs rather than seconds: a time-boxed fuzz run
# reports "context deadline exceeded" when its deadline lands during a slow
# input, which fails make test for nothing.
FUZZSMOKE ?= 500x
FUZZTIME ?= 1m
# Each new interesting input is minimised for up to this long (Go's default
# is a minute), during which the fuzzer reports 0 execs/sec: FuzzRestore's
# inputs are snapshots of kilobytes, and its "stalls" were these minimisations.
FUZZMINIMIZE ?= 10s

fuzz: deps
	@$(MAKE) --no-print-directory fuzz-run FUZZFOR=$(FUZZTIME)

fuzz-run:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; name=$${t#*:}; \
		out=$$($(GO) test $(CLP) -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZFOR) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg 2>&1) \
			&& echo "fuzz $$name ($$pkg, $(FUZZFOR)): ok" \
			|| { echo "$$out"; echo "fuzz $$name ($$pkg): FAILED"; exit 1; }; \
	done

bench: deps
	$(GO) test $(CLP) -run='^$$' -bench=. -benchtime=3x ./...

# The property tests with ten times rapid's default checks, with CLP and in
# pure Go (4 to 7 minutes on the 2-core VM). Failures leave their cases under
# testdata/rapid, which then replay in every run of make test.
SOAK_PACKAGES = ./lp ./alloc ./stride ./auction ./trade ./sim
soak: deps
	$(GO) test $(CLP) -count=1 -timeout 60m $(SOAK_PACKAGES) -rapid.checks 1000
	$(GO) test -count=1 -timeout 60m $(SOAK_PACKAGES) -rapid.checks 1000

# Each paper's evaluation has its own target, reproduce-<paper>, defined
# below and listed here.
reproduce: deps reproduce-gavel reproduce-oef reproduce-gandiva-fair reproduce-themis reproduce-profile-noise

# Gavel's evaluation, about 1.5 hours on 2 cores; outputs and plots go to
# docs/reproduction/ (the commands of docs/reproduction.md).
SIMULATE = $(GO) run $(CLP) ./examples/simulate -progress=false -plots docs/reproduction
GAVEL_LOAD = -jobs 9000 -measure 4000:5000
reproduce-gavel: deps
	@mkdir -p docs/reproduction
	$(SIMULATE) -experiment gavel-fig12 -seeds 5 | tee docs/reproduction/gavel-fig12.txt
	$(SIMULATE) -experiment gavel-fig13 -seeds 5 | tee docs/reproduction/gavel-fig13.txt
	$(SIMULATE) -experiment gavel-fig12 -seeds 5 -reset-interval 1920 -plot-prefix gavel_fig12_reset_ | tee docs/reproduction/gavel-fig12-reset.txt
	$(SIMULATE) -experiment gavel-fig13 -seeds 5 -reset-interval 1920 -plot-prefix gavel_fig13_reset_ | tee docs/reproduction/gavel-fig13-reset.txt
	$(SIMULATE) -experiment gavel-fig10 $(GAVEL_LOAD) -seeds 3 -rates 1,2,2.6,3 -mechanisms max-min,max-min-agnostic | tee docs/reproduction/gavel-fig10.txt
	$(SIMULATE) -experiment gavel-fig10 $(GAVEL_LOAD) -seeds 3 -rates 2.6 -per-server 8 -plot-prefix gavel_fig10_per_server_8_ -mechanisms max-min,max-min-agnostic | tee docs/reproduction/gavel-fig10-per-server-8.txt
	$(SIMULATE) -experiment gavel-makespan -sizes 100,200,400 -seeds 3 -mechanisms makespan,fifo,fifo-agnostic,max-min | tee docs/reproduction/gavel-makespan.txt
	$(SIMULATE) -experiment gavel-makespan -sizes 100,200,400 -seeds 3 -plot-prefix gavel_makespan_fifo_ -mechanisms makespan,fifo-gavel | tee docs/reproduction/gavel-makespan-fifo-gavel.txt
	$(SIMULATE) -experiment gavel-makespan -sizes 100,200,400 -seeds 3 -plot-prefix gavel_makespan_gandiva_ -mechanisms makespan,gandiva-packing | tee docs/reproduction/gavel-makespan-gandiva-packing.txt
	$(SIMULATE) -experiment gavel-makespan -sizes 100,400,1000 -seeds 3 -plot-prefix gavel_makespan_ss_ -mechanisms makespan,space-sharing-min-makespan | tee docs/reproduction/gavel-makespan-space-sharing.txt
	$(SIMULATE) -experiment gavel-makespan -cluster 12:12:12 -sizes 100,300 -seeds 3 -plot-prefix gavel_makespan_ss_small_ -mechanisms makespan,space-sharing-min-makespan,space-sharing-min-makespan-then-total | tee docs/reproduction/gavel-makespan-space-sharing-small.txt
	$(SIMULATE) -experiment gavel-fig9 $(GAVEL_LOAD) -seeds 3 -rates 4,5.6 -plot-prefix gavel_fifo_ -mechanisms fifo,fifo-gavel | tee docs/reproduction/gavel-fifo.txt
	$(SIMULATE) -experiment gavel-fig9 $(GAVEL_LOAD) -seeds 3 -rates 4,5.6 -plot-prefix gavel_fifo_packing_ -mechanisms fifo-gavel,fifo-perf,fifo-packing | tee docs/reproduction/gavel-fifo-packing.txt
	$(SIMULATE) -experiment gavel-fig10 $(GAVEL_LOAD) -seeds 3 -rates 2.6 -plot-prefix gavel_fifo_packing_multi_ -mechanisms fifo-gavel,fifo-perf,fifo-packing | tee docs/reproduction/gavel-fifo-packing-multi.txt
	$(SIMULATE) -experiment gavel-fig9 $(GAVEL_LOAD) -seeds 3 -rates 4,5.6 -plot-prefix gavel_fifo_ss_ -mechanisms fifo,space-sharing-fifo | tee docs/reproduction/gavel-fifo-space-sharing.txt
	$(SIMULATE) -experiment gavel-fig10 $(GAVEL_LOAD) -seeds 3 -rates 2.6 -plot-prefix gavel_fifo_ss_multi_ -mechanisms fifo,space-sharing-fifo | tee docs/reproduction/gavel-fifo-space-sharing-multi.txt
	$(SIMULATE) -experiment gavel-fig10 $(GAVEL_LOAD) -seeds 3 -rates 1.5,2 -plot-prefix gavel_fifo_ss_multi_low_ -mechanisms fifo,space-sharing-fifo | tee docs/reproduction/gavel-fifo-space-sharing-multi-low.txt
	$(SIMULATE) -experiment gavel-space-sharing $(GAVEL_LOAD) -seeds 3 -rates 4,5.6 -mechanisms max-min,space-sharing-max-min,space-sharing-max-min-pair-priorities | tee docs/reproduction/gavel-space-sharing.txt
	$(SIMULATE) -experiment gavel-space-sharing $(GAVEL_LOAD) -seeds 3 -multi -rates 2.6 -plot-prefix gavel_ss_multi_ -mechanisms max-min,space-sharing-max-min,space-sharing-max-min-pair-priorities | tee docs/reproduction/gavel-space-sharing-multi.txt
	$(SIMULATE) -experiment gavel-space-sharing $(GAVEL_LOAD) -seeds 3 -rates 4,5.6 -plot-prefix gavel_ss_then_total_ -mechanisms max-min,space-sharing-max-min-then-total | tee docs/reproduction/gavel-space-sharing-then-total.txt
	$(SIMULATE) -experiment gavel-space-sharing $(GAVEL_LOAD) -seeds 3 -multi -rates 2.6 -plot-prefix gavel_ss_then_total_multi_ -mechanisms max-min,space-sharing-max-min-then-total | tee docs/reproduction/gavel-space-sharing-then-total-multi.txt
	$(SIMULATE) -experiment gavel-space-sharing $(GAVEL_LOAD) -seeds 3 -rates 4,5.6 -plot-prefix gavel_ss_water_filling_ -mechanisms max-min,space-sharing-water-filling | tee docs/reproduction/gavel-space-sharing-water-filling.txt
	$(SIMULATE) -experiment gavel-space-sharing $(GAVEL_LOAD) -seeds 3 -multi -rates 2.6 -plot-prefix gavel_ss_water_filling_multi_ -mechanisms max-min,space-sharing-water-filling | tee docs/reproduction/gavel-space-sharing-water-filling-multi.txt
	$(SIMULATE) -experiment gavel-space-sharing $(GAVEL_LOAD) -seeds 3 -rates 5.6 -plot-prefix gavel_gandiva_packing_ -mechanisms space-sharing-max-min,gandiva-packing,gandiva-packing-sum-over-types | tee docs/reproduction/gavel-gandiva-packing.txt
	$(SIMULATE) -experiment gavel-space-sharing $(GAVEL_LOAD) -seeds 3 -multi -rates 2.6 -plot-prefix gavel_gandiva_packing_multi_ -mechanisms space-sharing-max-min,gandiva-packing,gandiva-packing-sum-over-types | tee docs/reproduction/gavel-gandiva-packing-multi.txt
	$(SIMULATE) -experiment gavel-fig11 $(GAVEL_LOAD) -seeds 3 -rates 2.6 -plot-prefix gavel_fig11_ -mechanisms finish-time-fairness,finish-time-fairness-agnostic | tee docs/reproduction/gavel-fig11.txt
	$(SIMULATE) -experiment gavel-fig15 $(GAVEL_LOAD) -seeds 1 -rates 4,5.6 -round-lengths 6,12,24,48 | tee docs/reproduction/gavel-fig15.txt
	$(SIMULATE) -experiment gavel-fig9 $(GAVEL_LOAD) -seeds 3 -rates 2,3,4,5,5.6,6,7 -mechanisms max-min,max-min-agnostic | tee docs/reproduction/gavel-fig9.txt

# What profiling errors cost (docs/simulation.md, (e)): Gavel's Figure 9
# workload told every rate off by up to 0, 10, 27 and 50%, with pure-Go LPs
# (no $(CLP)), the heterogeneity-agnostic policy beside it once; then
# cooperative OEF, exact, warm and tolerant, with and without 10% error.
# About 1.5 hours on 2 cores.
reproduce-profile-noise: deps
	@mkdir -p docs/reproduction
	@set -e; for n in 0 0.1 0.27 0.5; do \
		m=max-min,finish-time-fairness; if [ $$n = 0 ]; then m=$$m,max-min-agnostic; fi; \
		echo "== -profile-noise $$n"; \
		$(GO) run ./examples/simulate -progress=false -experiment gavel-fig9 $(GAVEL_LOAD) -seeds 3 -rates 4,5.6,6 -mechanisms $$m -profile-noise $$n; \
	done | tee docs/reproduction/gavel-fig9-profile-noise.txt
	@set -e; for n in 0 0.1; do \
		echo "== -profile-noise $$n"; \
		$(GO) run ./examples/simulate -progress=false -experiment load -jobs 1000 -rates 6,8,10 -seeds 3 \
			-mechanisms oef-cooperative,oef-cooperative-warm,oef-cooperative-envy-0.1 -profile-noise $$n; \
	done | tee docs/reproduction/oef-profile-noise.txt

# OEF's evaluation (section 6), about 1.5 minutes on 2 cores; outputs go to
# docs/reproduction/.
reproduce-oef: deps
	$(SIMULATE) -experiment oef-throughput -jobs 200 -seeds 3 | tee docs/reproduction/oef-throughput.txt
	$(SIMULATE) -experiment oef-fairness | tee docs/reproduction/oef-fairness.txt
	$(SIMULATE) -experiment oef-profiling -jobs 200 | tee docs/reproduction/oef-profiling.txt
	$(SIMULATE) -experiment oef-jct -jobs 1000 -rate 3 -seeds 3 | tee docs/reproduction/oef-jct.txt

# Gandiva_fair's evaluation (Figures 6, 7, 8, 10, 11), under a minute on 2
# cores; outputs and plots go to docs/reproduction/.
reproduce-gandiva-fair: deps
	@mkdir -p docs/reproduction
	$(SIMULATE) -experiment gandiva-fair-fig6 | tee docs/reproduction/gandiva-fair-fig6.txt
	$(SIMULATE) -experiment gandiva-fair-fig7 | tee docs/reproduction/gandiva-fair-fig7.txt
	$(SIMULATE) -experiment gandiva-fair-trading | tee docs/reproduction/gandiva-fair-trading.txt

# Themis' evaluation (docs/reproduction.md, Themis): 85 apps (the trace's
# subset) of the trace's sizes, 3 seeds for Figures 9, 10, 14, 15-16 and 19,
# then the small apps of earlier runs (-app-scale small), 3 seeds, then the
# paper's pricing of apps holding nothing (themis-unbounded-wait) on Figures 9
# and 14, and each job's own slowdown (themis-job-locality) on Figure 9.
# About 2 hours on 2 cores, half of it Figures 14 and 19.
THEMIS_MECHS = -mechanisms themis,tiresias,gandiva,slaq,optimus,srtf,srsf,finish-time-fairness
THEMIS_FIG14_MECHS = -mechanisms themis,tiresias,gandiva,slaq,optimus,srtf,srsf,themis-patience-2,finish-time-fairness
reproduce-themis: deps
	$(SIMULATE) -experiment themis-fig9 -jobs 85 -seeds 3 $(THEMIS_MECHS) | tee docs/reproduction/themis-fig9.txt
	$(SIMULATE) -experiment themis-fig10 -jobs 85 -seeds 3 $(THEMIS_MECHS) | tee docs/reproduction/themis-fig10.txt
	$(SIMULATE) -experiment themis-fig15 -jobs 85 -seeds 3 $(THEMIS_MECHS) | tee docs/reproduction/themis-fig15.txt
	$(SIMULATE) -experiment themis-fig14 -jobs 85 -seeds 3 -contentions 2,4 $(THEMIS_FIG14_MECHS) | tee docs/reproduction/themis-fig14.txt
	$(SIMULATE) -experiment themis-fig19 -jobs 85 -seeds 3 | tee docs/reproduction/themis-fig19.txt
	$(SIMULATE) -experiment themis-fig9 -jobs 85 -seeds 3 -app-scale small -plot-prefix themis_small_fig9_ $(THEMIS_MECHS) | tee docs/reproduction/themis-small-fig9.txt
	$(SIMULATE) -experiment themis-fig10 -jobs 85 -seeds 3 -app-scale small -plot-prefix themis_small_fig10_ $(THEMIS_MECHS) | tee docs/reproduction/themis-small-fig10.txt
	$(SIMULATE) -experiment themis-fig15 -jobs 85 -seeds 3 -app-scale small -plot-prefix themis_small_fig15_ $(THEMIS_MECHS) | tee docs/reproduction/themis-small-fig15.txt
	$(SIMULATE) -experiment themis-fig14 -jobs 85 -seeds 3 -app-scale small -plot-prefix themis_small_fig14_ $(THEMIS_MECHS),themis-patience-2 | tee docs/reproduction/themis-small-fig14.txt
	$(SIMULATE) -experiment themis-fig9 -jobs 85 -seeds 3 -plot-prefix themis_unbounded_wait_fig9_ -mechanisms themis,themis-unbounded-wait | tee docs/reproduction/themis-unbounded-wait-fig9.txt
	$(SIMULATE) -experiment themis-fig9 -jobs 85 -seeds 3 -app-scale small -plot-prefix themis_unbounded_wait_small_fig9_ -mechanisms themis,themis-unbounded-wait | tee docs/reproduction/themis-unbounded-wait-small-fig9.txt
	$(SIMULATE) -experiment themis-fig14 -jobs 85 -seeds 3 -contentions 2,4 -app-scale small -plot-prefix themis_unbounded_wait_small_fig14_ -mechanisms themis,themis-patience-2,themis-unbounded-wait | tee docs/reproduction/themis-unbounded-wait-small-fig14.txt
	$(SIMULATE) -experiment themis-fig14 -jobs 85 -seeds 3 -contentions 2,4 -plot-prefix themis_unbounded_wait_fig14_ -mechanisms themis-unbounded-wait | tee docs/reproduction/themis-unbounded-wait-fig14.txt
	$(SIMULATE) -experiment themis-fig9 -jobs 85 -seeds 3 -plot-prefix themis_job_locality_fig9_ -mechanisms themis,themis-job-locality | tee docs/reproduction/themis-job-locality-fig9.txt
	$(SIMULATE) -experiment themis-fig9 -jobs 85 -seeds 3 -app-scale small -plot-prefix themis_job_locality_small_fig9_ -mechanisms themis,themis-job-locality | tee docs/reproduction/themis-job-locality-small-fig9.txt
