# Stand-in for OpenWrt's rules.mk when `cargo xtask` evaluates a device's
# kernel recipe (xtask/src/inputs/openwrt/image/mod.rs): only the helpers the
# target image Makefiles use while Device/* definitions are expanded. The
# real rules.mk needs a configured checkout (.config, staging directories).

empty :=
space := $(empty) $(empty)
comma := ,
# rules.mk: qstrip, toupper, tolower.
qstrip = $(strip $(subst ",,$(1)))
toupper = $(shell echo '$(1)' | tr '[:lower:]' '[:upper:]')
tolower = $(shell echo '$(1)' | tr '[:upper:]' '[:lower:]')
# include/version.mk's default distribution name.
VERSION_DIST ?= OpenWrt
