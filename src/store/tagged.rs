//! Internally tagged enums that deserialise in one pass.
//!
//! serde's own `#[serde(tag = "...")]` cannot know which variant it reads until it has seen
//! the tag, which may come last, so it first buffers the whole object into its private
//! `Content` tree and then deserialises the variant from that copy. For the store's wire
//! (a whole task on every save and every read) that buffering was about a tenth of a
//! standard seed's time. [`tag_first_enum!`] declares an enum whose `Serialize` is serde's
//! own internally tagged one (so the bytes on the wire do not change) and whose
//! `Deserialize` requires the tag to be the object's first key, which serde's serialiser
//! always writes first, and then reads the variant's fields straight from the input.

/// Declares an internally tagged enum (`tag = "..."`, each variant with its wire name) whose
/// deserialiser reads the tag first and streams the rest; see the [module docs](self).
///
/// ```ignore
/// tag_first_enum! {
///     #[derive(Debug)]
///     pub(crate) enum Request tag "op" {
///         Get = "get" { task_id: String },
///         List = "list",
///     }
/// }
/// ```
macro_rules! tag_first_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident tag $tag:literal {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $wire:literal
                $({ $( $(#[$fmeta:meta])* $field:ident : $fty:ty ),* $(,)? })?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(serde::Serialize)]
        #[serde(tag = $tag)]
        $vis enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $wire)]
                $variant $({ $( $(#[$fmeta])* $field: $fty ),* })?
            ),*
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
                struct TagFirst;
                impl<'de> serde::de::Visitor<'de> for TagFirst {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str(concat!("an object whose first key is \"", $tag, "\""))
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$name, A::Error> {
                        use serde::de::Error;
                        match map.next_key::<std::borrow::Cow<'de, str>>()? {
                            Some(key) if key == $tag => {}
                            _ => return Err(A::Error::missing_field($tag)),
                        }
                        let wire: std::borrow::Cow<'de, str> = map.next_value()?;
                        let rest = serde::de::value::MapAccessDeserializer::new(map);
                        match wire.as_ref() {
                            $(
                                $wire => $crate::store::tagged::tag_first_enum!(
                                    @variant rest, $name, $variant
                                    $({ $( $(#[$fmeta])* $field : $fty ),* })?
                                ),
                            )*
                            other => Err(A::Error::unknown_variant(other, &[$($wire),*])),
                        }
                    }
                }
                input.deserialize_map(TagFirst)
            }
        }
    };
    // A variant with fields: they are read into a struct of the same fields, straight
    // from what follows the tag.
    (@variant $rest:ident, $name:ident, $variant:ident
        { $( $(#[$fmeta:meta])* $field:ident : $fty:ty ),* }) => {{
        #[derive(serde::Deserialize)]
        struct Fields { $( $(#[$fmeta])* $field: $fty ),* }
        let fields: Fields = serde::Deserialize::deserialize($rest)?;
        Ok($name::$variant { $( $field: fields.$field ),* })
    }};
    // A unit variant: whatever follows the tag is read and ignored.
    (@variant $rest:ident, $name:ident, $variant:ident) => {{
        let _: serde::de::IgnoredAny = serde::Deserialize::deserialize($rest)?;
        Ok($name::$variant)
    }};
}

pub(crate) use tag_first_enum;

#[cfg(test)]
mod tests {
    use serde_json::json;

    tag_first_enum! {
        #[derive(Debug, PartialEq)]
        enum Request tag "op" {
            Get = "get" { task_id: String },
            /// A documented variant with a defaulted field.
            Save = "save" { task: String, #[serde(default)] push: bool },
            List = "list",
        }
    }

    #[test]
    fn it_writes_what_serdes_internally_tagged_enum_writes() {
        let get = Request::Get {
            task_id: "t1".into(),
        };
        assert_eq!(
            serde_json::to_string(&get).unwrap(),
            r#"{"op":"get","task_id":"t1"}"#
        );
        assert_eq!(
            serde_json::to_string(&Request::List).unwrap(),
            r#"{"op":"list"}"#
        );
    }

    #[test]
    fn it_reads_back_what_it_writes() {
        for request in [
            Request::Get {
                task_id: "t1".into(),
            },
            Request::Save {
                task: "t2".into(),
                push: true,
            },
            Request::List,
        ] {
            let bytes = serde_json::to_vec(&request).unwrap();
            assert_eq!(serde_json::from_slice::<Request>(&bytes).unwrap(), request);
        }
        let defaulted: Request =
            serde_json::from_value(json!({"op": "save", "task": "t"})).expect("push defaults");
        assert_eq!(
            defaulted,
            Request::Save {
                task: "t".into(),
                push: false
            }
        );
    }

    #[test]
    fn a_tag_that_is_not_first_or_unknown_is_an_error() {
        let late = serde_json::from_str::<Request>(r#"{"task_id":"t1","op":"get"}"#);
        assert!(late.unwrap_err().to_string().contains("missing field `op`"));
        let unknown = serde_json::from_str::<Request>(r#"{"op":"put"}"#);
        assert!(unknown
            .unwrap_err()
            .to_string()
            .contains("unknown variant `put`"));
        let missing = serde_json::from_str::<Request>(r#"{"op":"get"}"#);
        assert!(missing.unwrap_err().to_string().contains("task_id"));
    }
}
