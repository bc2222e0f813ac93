//! What a joint histogram did not count, apart from the API so that both engines can fill it
//! without importing the facade that calls them.

/// Samples a joint histogram did not count: outside the bins of some axis, or NaN on some axis
/// (a sample both outside one axis and NaN on another is tallied as NaN).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JointTallies {
    /// Samples outside the bins in some dimension.
    pub outside: u64,
    /// Samples with a NaN coordinate.
    pub nan: u64,
}
