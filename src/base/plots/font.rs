//! The one font every plot uses, bundled so PNG text needs no system font
//! libraries and looks the same on every host.

use std::sync::OnceLock;

use plotters::style::FontStyle;

/// Family name the plots ask for; plotters' own default labels ask for it too.
pub(super) const FAMILY: &str = "sans-serif";

/// DejaVu Sans (Bitstream Vera license, see assets/fonts/DejaVuSans-LICENSE.txt).
static DEJAVU_SANS: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// Registers the bundled font under [`FAMILY`] once per process; later calls
/// return the first outcome.
pub(super) fn register_bundled_font() -> crate::base::error::Result<()> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS)
                .map_err(|_| "the bundled DejaVuSans.ttf is not a valid font".to_string())
        })
        .clone()
        .map_err(crate::base::error::Error::msg)
}
