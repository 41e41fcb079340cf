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
# rules.mk's exp_units: size units to shell arithmetic (`3072k` ->
# `3072 * 1024`), as Build/check-size of include/image-commands.mk
# evaluates a limit with $$(( )).
exp_units = $(subst k, * 1024,$(subst m, * 1024k,$(subst g, * 1024m,$(1))))
