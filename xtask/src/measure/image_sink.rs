//! What an image recipe's steps write to (`$@`): its length only, or its
//! bytes (measure/whole_image.rs, measure/padjffs2.rs).

/// The file a step appends whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImagePart {
    /// `$(IMAGE_KERNEL)`: the device's kernel image.
    Kernel,
    /// `$(IMAGE_ROOTFS)`: the rootfs.
    Rootfs,
}

/// The largest image sized, bytes (1 TiB, as `device-fit.json`'s sizes):
/// a step that would make one larger cannot be sized.
pub const MAX_IMAGE_BYTES: u64 = 1 << 40;

/// What the steps write to: `$@`.
pub trait ImageSink {
    /// The image's length so far, bytes.
    fn length(&self) -> u64;
    /// An [`ImagePart`]'s length, bytes.
    fn part_length(&self, part: ImagePart) -> u64;
    /// Appends a whole [`ImagePart`].
    fn append(&mut self, part: ImagePart);
    /// Appends `count` bytes of `byte`.
    fn fill(&mut self, byte: u8, count: u64);
    /// Appends `bytes`.
    fn extend(&mut self, bytes: &[u8]);
}

/// The image's length only, from the parts' lengths (bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct Lengths {
    /// Length so far.
    pub len: u64,
    /// `IMAGE_KERNEL`'s length.
    pub kernel: u64,
    /// `IMAGE_ROOTFS`'s length.
    pub rootfs: u64,
}

impl ImageSink for Lengths {
    fn length(&self) -> u64 {
        self.len
    }
    fn part_length(&self, part: ImagePart) -> u64 {
        match part {
            ImagePart::Kernel => self.kernel,
            ImagePart::Rootfs => self.rootfs,
        }
    }
    fn append(&mut self, part: ImagePart) {
        self.len += match part {
            ImagePart::Kernel => self.kernel,
            ImagePart::Rootfs => self.rootfs,
        };
    }
    fn fill(&mut self, _byte: u8, count: u64) {
        self.len += count;
    }
    fn extend(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
    }
}

/// The image's bytes.
#[derive(Debug, Clone)]
pub struct Bytes<'a> {
    /// The image so far.
    pub out: Vec<u8>,
    /// `IMAGE_KERNEL`.
    pub kernel: &'a [u8],
    /// `IMAGE_ROOTFS`.
    pub rootfs: &'a [u8],
}

impl ImageSink for Bytes<'_> {
    fn length(&self) -> u64 {
        self.out.len() as u64
    }
    fn part_length(&self, part: ImagePart) -> u64 {
        match part {
            ImagePart::Kernel => self.kernel.len() as u64,
            ImagePart::Rootfs => self.rootfs.len() as u64,
        }
    }
    fn append(&mut self, part: ImagePart) {
        let bytes = match part {
            ImagePart::Kernel => self.kernel,
            ImagePart::Rootfs => self.rootfs,
        };
        self.out.extend_from_slice(bytes);
    }
    fn fill(&mut self, byte: u8, count: u64) {
        self.out.resize(self.out.len() + count as usize, byte);
    }
    fn extend(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }
}
