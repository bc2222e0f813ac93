//! Raw binary input: a file of native-endian (little-endian on every supported machine) samples of
//! the type given by `--dtype`, with no header. The file is memory-mapped and viewed in place.

use std::path::Path;

use anyhow::{bail, Result};
use smemkit::sample::SampleType;

use super::data::{decode, MappedSamples, SampleData};
use super::{map_file, progress};

pub fn read(path: &Path, ty: SampleType) -> Result<SampleData> {
    let map = map_file(path)?;
    if map.len() % ty.size() != 0 {
        bail!(
            "{} holds {} bytes, not a whole number of {ty} samples ({} bytes each)",
            path.display(),
            map.len(),
            ty.size()
        );
    }
    progress::touch(&map, "reading");
    let len = map.len() / ty.size();
    match MappedSamples::new(map, 0, len, ty) {
        Some(m) => Ok(SampleData::Mapped(m)),
        // A page-aligned map is always aligned; this only guards against unusual platforms.
        None => Ok(SampleData::Owned(decode(
            &map_file(path)?,
            ty,
            cfg!(target_endian = "little"),
        ))),
    }
}
