//! The words zklock's front ends share: one table per vocabulary (error
//! kinds, lock states, modes, node kinds, connection states, release
//! outcomes, create modes), declared once with [`crate::vocabulary!`].
//!
//! Each table gives its words one spelling, `UPPER_SNAKE` (the Rust
//! enum's `name()`), and a fixed number (`code()`, the value of the C
//! enum). The C header's enums, the Python enums and exception classes
//! and the TypeScript unions are generated from these tables
//! (zklock-core's `tests/vocabulary.rs`, `make vocabulary`), and
//! `make test` fails when a generated file differs from its table.

/// One word of a [`Vocabulary`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    /// The Rust enum variant that is this word (`"ConnectionLoss"`).
    pub variant: &'static str,
    /// The word as every front end spells it (`"CONNECTION_LOSS"`).
    pub name: &'static str,
    /// The fixed number of the word (its C enum value); never reused.
    pub code: i32,
    /// What the word means: the variant's doc comment, a line per line.
    pub doc: &'static str,
}

/// A vocabulary: the words of one Rust enum, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vocabulary {
    /// The Rust enum's name (`"ErrorKind"`).
    pub name: &'static str,
    /// What the words name: the enum's doc comment, a line per line.
    pub doc: &'static str,
    /// Its words.
    pub words: &'static [Word],
}

impl Vocabulary {
    /// The word called `name`, if there is one.
    pub fn word(&self, name: &str) -> Option<&'static Word> {
        self.words.iter().find(|w| w.name == name)
    }
}

/// Declares a fieldless enum from one table, a line per word:
/// `Variant = code, "NAME";` after the variant's doc comment. The enum
/// gets `ALL` (its values in table order), `VOCABULARY` (the table as
/// data, for the generated files of the front ends), `name()`, `code()`
/// and `from_name()`, all from that one list.
///
/// The enum's doc comment comes first, then its `derive`, then any other
/// attributes (`repr`, `non_exhaustive`); a variant takes only doc
/// comments.
#[macro_export]
macro_rules! vocabulary {
    (
        $(#[doc = $edoc:literal])*
        #[derive($($derive:path),* $(,)?)]
        $(#[$meta:meta])*
        pub enum $Enum:ident {
            $( $(#[doc = $doc:literal])* $variant:ident = $code:literal, $name:literal; )*
        }
    ) => {
        $(#[doc = $edoc])*
        #[derive($($derive),*)]
        $(#[$meta])*
        pub enum $Enum {
            $( $(#[doc = $doc])* $variant = $code, )*
        }

        impl $Enum {
            /// Every value, in table order.
            pub const ALL: &'static [$Enum] = &[$($Enum::$variant),*];

            /// This enum's table: the name, number and meaning of each
            /// word (what the front ends' generated files are made from).
            pub const VOCABULARY: $crate::vocabulary::Vocabulary = $crate::vocabulary::Vocabulary {
                name: stringify!($Enum),
                doc: concat!($($edoc, "\n",)*),
                words: &[$(
                    $crate::vocabulary::Word {
                        variant: stringify!($variant),
                        name: $name,
                        code: $code,
                        doc: concat!($($doc, "\n",)*),
                    },
                )*],
            };

            /// The word's name, spelled the same in every front end
            /// (`UPPER_SNAKE`; the C enum's constant ends in it).
            pub fn name(self) -> &'static str {
                match self {
                    $( $Enum::$variant => $name, )*
                }
            }

            /// The word's fixed number (the value of the C enum's
            /// constant); never reused.
            pub fn code(self) -> i32 {
                match self {
                    $( $Enum::$variant => $code, )*
                }
            }

            /// The value whose [`name`](Self::name) is `name`, if any
            /// (exact spelling).
            pub fn from_name(name: &str) -> Option<$Enum> {
                match name {
                    $( $name => Some($Enum::$variant), )*
                    _ => None,
                }
            }
        }
    };
}
