// Command allocate reads an allocation problem as JSON on stdin, runs
// fractional allocation policies of gpufair on it, optionally audits each
// allocation against the fairness axioms, and writes the results as JSON on
// stdout, so that programs in any language can use gpufair without writing
// Go. The schema is in README.md; the problem is alloc.Problem's own JSON.
//
// Malformed JSON or an invalid instance gets a one-line error on stderr
// naming the field by its JSON path, and exit status 1; a bad flag or an
// argument (the request is read from stdin only) gets the usage and exit
// status 2.
//
// Usage:
//
//	go run ./examples/allocate < problem.json
//	go run ./examples/allocate -policies max-min,fifo -audit < problem.json
//	go run ./examples/allocate -audit-tenants < problem.json
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	fs := flag.NewFlagSet("allocate", flag.ContinueOnError)
	policies := fs.String("policies", "", "comma-separated policies, overriding the input's \"policies\"")
	audit := fs.Bool("audit", false, "audit every allocation job by job, as if the input's \"audit\" were true")
	auditTenants := fs.Bool("audit-tenants", false, "audit every allocation tenant by tenant, as if the input's \"audit_tenants\" were true")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "allocate: unexpected argument %q: the request is read from stdin, as in allocate < problem.json\n", fs.Arg(0))
		fs.Usage()
		os.Exit(2)
	}
	o := options{audit: *audit, auditTenants: *auditTenants}
	if *policies != "" {
		o.policies = strings.Split(*policies, ",")
	}
	if err := run(context.Background(), os.Stdin, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "allocate:", oneLine(err))
		os.Exit(1)
	}
}

// options are the command-line overrides of the input.
type options struct {
	policies     []string
	audit        bool
	auditTenants bool
}

// oneLine joins a multi-line error (errors.Join) with "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// run decodes the request from r, solves it and encodes the response to w.
func run(ctx context.Context, r io.Reader, w io.Writer, o options) error {
	req, err := decode(r)
	if err != nil {
		return err
	}
	if o.policies != nil {
		req.Policies = o.policies
	}
	req.Audit = req.Audit || o.audit
	req.AuditTenants = req.AuditTenants || o.auditTenants
	resp, err := solve(ctx, req)
	if err != nil {
		return err
	}
	return encode(w, resp)
}
