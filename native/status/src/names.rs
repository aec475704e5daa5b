//! Enums in JSON by their lower-case names (`"serial"`, `"split"`), not their numbers.

/// A serde `with` module for an `i32` field holding a generated enum, by name.
macro_rules! by_name {
    ($module:ident, $enum:ident, $($variant:ident => $name:literal),+) => {
        #[doc = concat!("`", stringify!($enum), "` by name.")]
        pub mod $module {
            use serde::{Deserialize, Deserializer, Serializer};

            use crate::pb::$enum;

            const NAMES: &[&str] = &[$($name),+];

            pub fn name(v: i32) -> &'static str {
                match $enum::try_from(v) {
                    $(Ok($enum::$variant) => $name,)+
                    _ => "unspecified",
                }
            }

            pub fn serialize<S: Serializer>(v: &i32, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(name(*v))
            }

            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
                let v = String::deserialize(d)?;
                match v.as_str() {
                    $($name => Ok($enum::$variant as i32),)+
                    other => Err(serde::de::Error::unknown_variant(other, NAMES)),
                }
            }
        }
    };
}

by_name!(region, Region, Parallel => "parallel", Serial => "serial", Stock => "stock");
by_name!(mode, Mode, Parallel => "parallel", Split => "split", Inline => "inline", Stock => "stock");
