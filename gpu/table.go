package gpu

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the host as plain-text tables: the inventory, one row
// per device (MIG devices indented below their GPU), and the link matrix in
// nvidia-smi topo -m notation (NV<n> for n shared NVLinks, else the PCIe
// path: PIX, PXB, PHB, NODE, SYS, BRD for two GPUs on one board, ? when
// unknown). When some GPUs share NVLinks, a second matrix gives every pair's
// PCIe path. Hosts with fewer than two GPUs get no matrix. A nil h is an
// error wrapping ErrNoHosts; an NVLink whose Remote is none of the Remote
// constants counts as one to an unknown device.
func (h *Host) WriteTable(w io.Writer) error {
	if h == nil {
		return fmt.Errorf("%w: nil host", ErrNoHosts)
	}
	types, count := h.Capacity()
	var caps []string
	for k, t := range types {
		caps = append(caps, fmt.Sprintf("%d %s", count[k], t))
	}
	if len(caps) == 0 {
		caps = []string{"none schedulable"}
	}
	driver := h.Driver
	if driver == "" {
		driver = "unknown"
	}
	fmt.Fprintf(w, "host %s, driver %s, %d GPUs (%s)\n\n", h.Name, driver, len(h.Devices), strings.Join(caps, ", "))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tTYPE\tNAME\tMEMORY\tCC\tPCI BUS ID\tNUMA\tMIG\tNVLINK\tUUID")
	for i := range h.Devices {
		d := &h.Devices[i]
		numa := "-"
		if d.NUMANode >= 0 {
			numa = strconv.Itoa(d.NUMANode)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Index, d.Type, d.Name,
			gib(d.MemoryBytes), d.ComputeCapability, d.PCIBusID, numa, migLabel(d.MIG), nvlinkLabel(d.NVLinks), d.UUID)
		for _, m := range d.MIG.Instances {
			fmt.Fprintf(tw, "  mig %d\t\t\t%s\t\t\t\t\t\t%s\n", m.Slot, gib(m.MemoryBytes), m.UUID)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(h.Devices) < 2 {
		return nil
	}

	nv := false
	for _, l := range h.Links {
		nv = nv || l.NVLinks > 0
	}
	fmt.Fprintln(w, "\nlinks (NV<n>: n NVLinks, else the PCIe path):")
	if err := h.writeMatrix(w, Link.String); err != nil {
		return err
	}
	if !nv {
		return nil
	}
	fmt.Fprintln(w, "\nPCIe paths:")
	return h.writeMatrix(w, func(l Link) string { return l.Path.String() })
}

func (h *Host) writeMatrix(w io.Writer, label func(Link) string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for j := range h.Devices {
		fmt.Fprintf(tw, "\tGPU%d", j)
	}
	fmt.Fprintln(tw)
	for i := range h.Devices {
		fmt.Fprintf(tw, "GPU%d", i)
		for j := range h.Devices {
			cell := "X"
			if i != j {
				cell = "-"
				if l, ok := h.Link(i, j); ok {
					cell = label(l)
				}
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
func gib(b uint64) string {
	g := float64(b) / (1 << 30)
	if g == float64(int64(g)) {
		return fmt.Sprintf("%d GiB", int64(g))
	}
	return fmt.Sprintf("%.1f GiB", g)
}

func migLabel(m MIG) string {
	on := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	switch {
	case !m.Supported:
		return "n/a"
	case m.Enabled != m.Pending:
		return on(m.Enabled) + " (" + on(m.Pending) + " after reset)"
	case m.Enabled:
		return fmt.Sprintf("on (%d inst.)", len(m.Instances))
	}
	return "off"
}

// nvlinkLabel counts active ports by the kind of their far end, e.g.
// "12 to nvswitch" or "4 to gpu". A Remote out of the constants' range (a
// Host is a plain value, which a caller may fill or decode) is unknown.
func nvlinkLabel(ls []NVLink) string {
	var n [RemoteCPU + 1]int
	for _, l := range ls {
		if l.Active {
			r := l.Remote
			if r < RemoteUnknown || r > RemoteCPU {
				r = RemoteUnknown
			}
			n[r]++
		}
	}
	var parts []string
	for _, r := range []Remote{RemoteGPU, RemoteSwitch, RemoteCPU, RemoteUnknown} {
		if n[r] > 0 {
			parts = append(parts, fmt.Sprintf("%d to %s", n[r], r))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
