//! The command line, one module per concept: flags (`args`), flag values
//! (`parse`), and the subcommands (`cp`, `switch_side`, `tools`).

pub mod args;
pub mod cp;
pub mod parse;
pub mod switch_side;
pub mod tools;
