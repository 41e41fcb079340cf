# Stand-in for OpenWrt's include/image.mk when `cargo xtask` evaluates one
# device's kernel recipe (xtask/src/inputs/openwrt/image/mod.rs), written for
# xtask. It expands a device the way image.mk's `Device` does (the defaults
# of Device/Init, the board's Device/Default, then Device/<name> with its
# $(Device/...) inheritance, all in one $(eval)), gives the variables a
# kernel recipe reads to one target as target-specific `:=` variables (as
# Device/Export does for $(KDIR)/<device>-kernel.bin), and in that target's
# recipe, where image.mk runs $(call concat_cmd,$(KERNEL)), prints the
# recipe's steps instead. With XTASK_DEVICE set, only that device is
# expanded; with XTASK_ALL_DEVICES set, every device of TARGET_DEVICES is, in
# order, in one run (as image.mk's BuildImage does: a variable Device/Init
# does not reset, such as IMAGE_SIZE, carries over from the device before).
# Output lines:
#   XTASK DEVICES <TARGET_DEVICES>
#   XTASK DEVICE <name>  (the lines after it, up to the next, are its)
#   XTASK IMAGE <image>=<its IMAGE/<image> recipe>
#   XTASK VAR <NAME>=<value>
#   XTASK STEP <step> <arguments>
#   XTASK DEF <make variable>=<its unexpanded value, newlines as \n>
#   XTASK IDEF <make variable>=<the same, for the image steps xtask sizes>

include $(XTASK_CHECKOUT)/include/image-commands.mk

KDIR = $(KERNEL_BUILD_DIR)
KDIR_TMP = $(KDIR)/tmp
# image.mk's DTS_DIR; board Makefiles may extend it (bcm53xx: /broadcom).
DTS_DIR := $(LINUX_DIR)/arch/$(LINUX_KARCH)/boot/dts

# The defaults image.mk's Device/Init gives every device, for the variables
# kernel recipes read.
define xtask/defaults
  DEVICE_NAME := $(1)
  KERNEL :=
  KERNEL_NAME := vmlinux
  KERNEL_SUFFIX := -kernel.bin
  KERNEL_SIZE :=
  DEFAULT :=
  KERNEL_DEPENDS :=
  CMDLINE :=
  DEVICE_DTS :=
  DEVICE_DTS_DIR :=
  DEVICE_DTS_CONFIG :=
  DEVICE_DTS_DELIMITER :=
  DEVICE_DTS_LOADADDR :=
  DEVICE_DTS_OVERLAY :=
  DEVICE_FDT_NUM :=
  UIMAGE_NAME :=
  UIMAGE_MAGIC :=
  UIMAGE_TIME :=
  IMAGES :=
  DEVICE_VENDOR :=
  DEVICE_MODEL :=
  DEVICE_VARIANT :=
  DEVICE_PACKAGES :=
  SUPPORTED_DEVICES :=
  FILESYSTEMS := $(TARGET_FILESYSTEMS)
endef

# What the printing recipe reads, each as a target-specific variable.
XTASK_RECIPE_VARS := KERNEL DEVICE_NAME KERNEL_LOADADDR KERNEL_ENTRY \
  DEVICE_DTS DEVICE_DTS_CONFIG DEVICE_DTS_DELIMITER DEVICE_DTS_LOADADDR \
  DEVICE_DTS_OVERLAY DEVICE_FDT_NUM UIMAGE_NAME UIMAGE_MAGIC UIMAGE_TIME \
  DEVICE_VENDOR DEVICE_MODEL DEVICE_VARIANT KERNEL_SIZE IMAGE_SIZE DEFAULT \
  BROKEN IMAGES
XTASK_DEFS := Build/lzma Build/lzma-no-dict Image/Prepare
# The definitions of the image steps xtask sizes (kernel_build/openwrt_image/
# image_steps.rs), printed once, before the devices.
XTASK_IMAGE_DEFS := Build/append-kernel Build/append-rootfs Build/pad-to \
  Build/pad-offset Build/pad-rootfs Build/pad-extra Build/append-string \
  Build/check-size
# What ramips' Build/loader-common reads (printed only for a recipe with
# a loader-kernel step, so that other recipes print what they did before).
XTASK_LOADER_VARS := LOADER_TYPE LZMA_TEXT_START LOADADDR LOADER_PLATFORM \
  SUBTARGET BOARDNAME

define xtask/pin
  xtask-kernel/$(2): $(1) := $$($(1))

endef

define xtask_newline


endef
xtask_escape = $(subst $(xtask_newline),\n,$(1))
xtask_var = $(info XTASK VAR $(1)=$($(1)))
xtask_def = $(info XTASK DEF $(1)=$(call xtask_escape,$(value $(1))))
xtask_idef = $(info XTASK IDEF $(1)=$(call xtask_escape,$(value $(1))))
# A recipe's steps: `|` separates them, spaces inside a step are kept by
# turning them into `^` while splitting.
xtask_each_step = $(foreach s,$(subst |, ,$(subst $(space),^,$(1))),$(call $(2),$(strip $(subst ^,$(space),$(s)))))
xtask_step = $(info XTASK STEP $(1))$(call xtask_def,Build/$(word 1,$(1)))$(if $(filter loader-kernel,$(word 1,$(1))),$(call xtask_def,Build/loader-common))

define xtask/device
  $(call xtask/defaults,$(1))
  $(call Device/Default,$(1))
  $(call Device/$(1),$(1))
  $$(info XTASK DEVICE $(1))
  $$(foreach i,$$(IMAGES),$$(info XTASK IMAGE $$(i)=$$(call xtask_escape,$$(IMAGE/$$(i)))))
  $$(info XTASK VAR KERNEL_NAME=$$(KERNEL_NAME))
  $$(info XTASK VAR BLOCKSIZE=$$(BLOCKSIZE))
  $$(info XTASK VAR DTS_DIR=$$(DTS_DIR))
  $$(info XTASK VAR DTB_SOURCE_DIR=$$(if $$(DEVICE_DTS_DIR),$$(DEVICE_DTS_DIR),$$(DTS_DIR)))
  $(foreach v,$(XTASK_RECIPE_VARS) $(XTASK_LOADER_VARS) $(DEVICE_VARS),$(call xtask/pin,$(v),$(1)))
  xtask-kernel/$(1):
	@:$$(info XTASK DEVICE $(1))$$(foreach v,$$(XTASK_RECIPE_VARS),$$(call xtask_var,$$(v)))$$(foreach d,$$(XTASK_DEFS),$$(call xtask_def,$$(d)))$$(if $$(filter loader-kernel,$$(KERNEL)),$$(foreach v,$$(XTASK_LOADER_VARS),$$(call xtask_var,$$(v))))$$(call xtask_each_step,$$(KERNEL),xtask_step)

endef

# The board Makefile ends with $(eval $(call BuildImage)).
xtask_expand = $(if $(XTASK_ALL_DEVICES),$(TARGET_DEVICES),$(filter $(XTASK_DEVICE),$(TARGET_DEVICES)))
define BuildImage
  $$(info XTASK DEVICES $(TARGET_DEVICES))
  $$(foreach d,$$(XTASK_IMAGE_DEFS),$$(call xtask_idef,$$(d)))
  .PHONY: xtask-done $(addprefix xtask-kernel/,$(xtask_expand))
  xtask-done: $(addprefix xtask-kernel/,$(xtask_expand))
	@:
  $(foreach d,$(xtask_expand),$(call xtask/device,$(d)))
endef
