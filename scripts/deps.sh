#!/bin/sh
# Installs what building gpufair needs on Debian: COIN-OR CLP (for the
# default LP backend, through cgo) and pkg-config. As root it installs them
# with apt-get; otherwise it prints the command to run and fails.
set -eu

missing=""
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
if ! pkg-config --exists clp 2>/dev/null && [ ! -f /usr/include/coin/ClpSimplex.hpp ]; then
	missing="$missing coinor-libclp-dev"
fi
command -v gcc >/dev/null 2>&1 || missing="$missing gcc"
command -v g++ >/dev/null 2>&1 || missing="$missing g++"

if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "installing:$missing"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
	else
		echo "gpufair needs:$missing" >&2
		echo "run: sudo apt-get update && sudo apt-get install -y$missing" >&2
		exit 1
	fi
fi

if ! command -v go >/dev/null 2>&1; then
	echo "gpufair needs Go 1.24 or newer on PATH: see https://go.dev/doc/install" >&2
	exit 1
fi
