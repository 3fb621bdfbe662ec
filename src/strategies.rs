//! proptest strategies (placeholder).
