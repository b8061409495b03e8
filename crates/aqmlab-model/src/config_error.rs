//! The error an engine returns for a config it refuses: the same type for the simulator and
//! the emulator, so the binding turns both into one Python exception with the same attributes.

/// Why an engine (the simulator or the emulator's router) refused its config, with where and
/// what kept apart so that the Python binding hands them over as data
/// (`aqmlab._core.ConfigError`), not as one string to re-parse.
///
/// The Python scenario models are the user-facing definition of every field and check; the
/// checks in the engines guard their own invariants against a caller that skips them, so a
/// `ConfigError` reaching a user means a check is missing from the models.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub kind: ConfigErrorKind,
    /// Dotted location in this config (`bottleneck.qdisc`, `flows.<group name>.app`); empty
    /// for the document as a whole.
    pub path: String,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigErrorKind {
    /// The JSON does not have the config's shape (a field missing, unknown or mistyped): the
    /// front end and the engine disagree about the schema.
    Shape,
    /// A value outside what the engine supports.
    Invalid,
}

impl ConfigErrorKind {
    /// The name Python sees in `ConfigError.kind`.
    pub fn name(self) -> &'static str {
        match self {
            ConfigErrorKind::Shape => "shape",
            ConfigErrorKind::Invalid => "invalid",
        }
    }
}

impl ConfigError {
    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError { kind: ConfigErrorKind::Invalid, path: path.into(), message: message.into() }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

/// Callers that report errors as text (`Simulation::new`) keep using `?`.
impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}
