//! Enums in JSON by their lower-case names (`"serial"`, `"split"`), not their numbers.

use serde::{Deserialize, Deserializer, Serializer};

use crate::pb::{Mode, Region};

/// `Region` as `parallel`, `serial` or `stock`.
pub mod region {
    use super::*;

    pub fn name(v: i32) -> &'static str {
        match Region::try_from(v) {
            Ok(Region::Serial) => "serial",
            Ok(Region::Stock) => "stock",
            Ok(Region::Parallel) => "parallel",
            _ => "unspecified",
        }
    }

    pub fn serialize<S: Serializer>(v: &i32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(name(*v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
        let v = String::deserialize(d)?;
        Ok(match v.as_str() {
            "parallel" => Region::Parallel,
            "serial" => Region::Serial,
            "stock" => Region::Stock,
            other => {
                return Err(serde::de::Error::unknown_variant(
                    other,
                    &["parallel", "serial", "stock"],
                ))
            }
        } as i32)
    }
}

/// `Mode` as `parallel`, `split`, `inline` or `stock`.
pub mod mode {
    use super::*;

    pub fn name(v: i32) -> &'static str {
        match Mode::try_from(v) {
            Ok(Mode::Parallel) => "parallel",
            Ok(Mode::Split) => "split",
            Ok(Mode::Inline) => "inline",
            Ok(Mode::Stock) => "stock",
            _ => "unspecified",
        }
    }

    pub fn serialize<S: Serializer>(v: &i32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(name(*v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
        let v = String::deserialize(d)?;
        Ok(match v.as_str() {
            "parallel" => Mode::Parallel,
            "split" => Mode::Split,
            "inline" => Mode::Inline,
            "stock" => Mode::Stock,
            other => {
                return Err(serde::de::Error::unknown_variant(
                    other,
                    &["parallel", "split", "inline", "stock"],
                ))
            }
        } as i32)
    }
}
