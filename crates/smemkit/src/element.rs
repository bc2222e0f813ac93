//! Element types of the array operations (stencil, transpose, reverse): the Rust type, its C name for
//! the kernels, and the arithmetic the stencil needs. Histograms have their own [`crate::sample::Sample`].

use cudarc::driver::DeviceRepr;

/// A plain numeric element that can live on the device.
pub trait Element:
    Copy + Send + Sync + Default + PartialEq + std::fmt::Debug + DeviceRepr + 'static
{
    /// The C type the kernels are compiled for.
    const C_TYPE: &'static str;
}

/// Elements a stencil can combine: floats take weights (fused multiply-adds, left to right),
/// integers take the plain sum (wrapping, as the kernels' unsigned accumulators do).
pub trait StencilElement: Element {
    /// Whether weights are accepted.
    const WEIGHTED: bool;
    /// The C type the kernel accumulates in.
    const ACC_C_TYPE: &'static str;
    /// `acc + w * x` (one rounding for floats), or `acc + x` wrapping for integers.
    fn step(acc: Self, w: Self, x: Self) -> Self;
}

macro_rules! element {
    ($t:ty, $c:expr) => {
        impl Element for $t {
            const C_TYPE: &'static str = $c;
        }
    };
}
element!(u8, "unsigned char");
element!(u16, "unsigned short");
element!(u32, "unsigned int");
element!(u64, "unsigned long long");
element!(i8, "signed char");
element!(i16, "short");
element!(i32, "int");
element!(i64, "long long");
element!(f32, "float");
element!(f64, "double");

impl StencilElement for f32 {
    const WEIGHTED: bool = true;
    const ACC_C_TYPE: &'static str = "float";
    #[inline(always)]
    fn step(acc: f32, w: f32, x: f32) -> f32 {
        w.mul_add(x, acc)
    }
}

impl StencilElement for f64 {
    const WEIGHTED: bool = true;
    const ACC_C_TYPE: &'static str = "double";
    #[inline(always)]
    fn step(acc: f64, w: f64, x: f64) -> f64 {
        w.mul_add(x, acc)
    }
}

impl StencilElement for i32 {
    const WEIGHTED: bool = false;
    const ACC_C_TYPE: &'static str = "unsigned int";
    #[inline(always)]
    fn step(acc: i32, _w: i32, x: i32) -> i32 {
        acc.wrapping_add(x)
    }
}

impl StencilElement for i64 {
    const WEIGHTED: bool = false;
    const ACC_C_TYPE: &'static str = "unsigned long long";
    #[inline(always)]
    fn step(acc: i64, _w: i64, x: i64) -> i64 {
        acc.wrapping_add(x)
    }
}
