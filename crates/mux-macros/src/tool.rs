//! `#[tool]`: reading the function and its attribute, and writing the tool.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, FnArg, Ident, ItemFn, Lit, LitStr, Meta, Pat, Token, Type};

/// What the attribute's arguments say.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

/// One argument of the function.
struct Arg {
    ident: Ident,
    ty: Type,
    docs: Vec<Attribute>,
    /// The call's `ToolContext`, not a tool argument.
    context: bool,
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let options = options(attr)?;
    let mut function: ItemFn = syn::parse2(item)?;
    check_signature(&function)?;
    let args = arguments(&mut function)?;

    let fn_name = &function.sig.ident;
    let vis = &function.vis;
    let tool = format_ident!(
        "{}",
        camel_case(&fn_name.to_string()),
        span = fn_name.span()
    );
    let args_struct = format_ident!("{}Args", tool);
    let name = options
        .name
        .clone()
        .unwrap_or_else(|| LitStr::new(&fn_name.to_string(), fn_name.span()));
    check_name(&name)?;
    let description = match &options.description {
        Some(description) => description.value(),
        None => doc_text(&function.attrs),
    };
    if description.trim().is_empty() {
        return Err(syn::Error::new(
            fn_name.span(),
            "a tool needs a description the model can read: add a doc comment to the function \
             (or `description = \"…\"` to the attribute)",
        ));
    }
    let description = description.trim();

    let fields = args.iter().filter(|a| !a.context).map(|a| {
        let (ident, ty, docs) = (&a.ident, &a.ty, &a.docs);
        quote! { #(#docs)* #vis #ident: #ty }
    });
    let field_names: Vec<&Ident> = args
        .iter()
        .filter(|a| !a.context)
        .map(|a| &a.ident)
        .collect();
    let call_args = args.iter().map(|a| {
        if a.context {
            quote! { cx.clone() }
        } else {
            let ident = &a.ident;
            quote! { #ident }
        }
    });
    let annotations = annotations(&options);
    let tool_doc = format!(
        "The tool `{}` (made by `#[mux::tool]` from `{fn_name}`).",
        name.value()
    );
    let args_doc = format!("The arguments of the tool `{}`.", name.value());

    Ok(quote! {
        #function

        #[doc = #tool_doc]
        #[derive(Clone, Copy, Debug, Default)]
        #vis struct #tool;

        #[doc = #args_doc]
        #[derive(::mux::__private::serde::Deserialize, ::mux::__private::schemars::JsonSchema)]
        #[serde(crate = "::mux::__private::serde", deny_unknown_fields)]
        #[schemars(crate = "::mux::__private::schemars")]
        #vis struct #args_struct {
            #(#fields,)*
        }

        impl ::mux::tool::TypedTool for #tool {
            type Args = #args_struct;
            const NAME: &'static str = #name;

            fn description(&self) -> ::std::string::String {
                ::std::string::String::from(#description)
            }

            fn annotations(&self) -> ::mux::tool::ToolAnnotations {
                #annotations
            }

            async fn call(
                &self,
                args: Self::Args,
                cx: ::mux::tool::ToolContext,
            ) -> ::std::result::Result<::mux::tool::ToolOutput, ::mux::tool::ToolError> {
                let #args_struct { #(#field_names,)* } = args;
                let _ = &cx;
                ::mux::tool::IntoToolResult::into_tool_result(#fn_name(#(#call_args),*).await)
            }
        }
    })
}

fn options(attr: TokenStream) -> syn::Result<Options> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
    let mut options = Options::default();
    for meta in metas {
        match &meta {
            Meta::Path(path) => {
                let flag = if path.is_ident("read_only") {
                    &mut options.read_only
                } else if path.is_ident("destructive") {
                    &mut options.destructive
                } else if path.is_ident("idempotent") {
                    &mut options.idempotent
                } else if path.is_ident("open_world") {
                    &mut options.open_world
                } else {
                    return Err(unknown(&meta));
                };
                *flag = true;
            }
            Meta::NameValue(pair) => {
                let text = match &pair.value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(text),
                        ..
                    }) => text.clone(),
                    other => {
                        return Err(syn::Error::new(other.span(), "expected a string literal"));
                    }
                };
                if pair.path.is_ident("name") {
                    options.name = Some(text);
                } else if pair.path.is_ident("description") {
                    options.description = Some(text);
                } else {
                    return Err(unknown(&meta));
                }
            }
            Meta::List(_) => return Err(unknown(&meta)),
        }
    }
    Ok(options)
}

fn unknown(meta: &Meta) -> syn::Error {
    syn::Error::new(
        meta.span(),
        "unknown `#[tool]` argument: expected `name = \"…\"`, `description = \"…\"`, \
         `read_only`, `destructive`, `idempotent` or `open_world`",
    )
}

/// An `async fn` without a receiver or generics.
fn check_signature(function: &ItemFn) -> syn::Result<()> {
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "`#[tool]` takes an `async fn`",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a `#[tool]` function cannot be generic: the model calls one concrete tool",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new(
            variadic.span(),
            "a `#[tool]` function cannot be variadic",
        ));
    }
    Ok(())
}

/// The function's arguments; their doc comments move from the function (where Rust does not
/// allow them) to the arguments struct.
fn arguments(function: &mut ItemFn) -> syn::Result<Vec<Arg>> {
    let mut args = Vec::new();
    let mut contexts = 0;
    for input in &mut function.sig.inputs {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                return Err(syn::Error::new(
                    receiver.span(),
                    "a `#[tool]` function is a free function, not a method",
                ));
            }
            FnArg::Typed(typed) => typed,
        };
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "a `#[tool]` argument is a plain name (`city: String`): its name is the \
                     argument's name in the schema",
                ));
            }
        };
        let docs: Vec<Attribute> = typed
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .cloned()
            .collect();
        typed.attrs.retain(|a| !a.path().is_ident("doc"));
        let context = is_tool_context(&typed.ty);
        if context {
            contexts += 1;
            if contexts > 1 {
                return Err(syn::Error::new(
                    typed.ty.span(),
                    "a `#[tool]` function takes the `ToolContext` at most once",
                ));
            }
        }
        args.push(Arg {
            ident,
            ty: (*typed.ty).clone(),
            docs,
            context,
        });
    }
    Ok(args)
}

/// Whether `ty` is `ToolContext` (by any path ending in it).
fn is_tool_context(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none()
        && path.path.segments.last().is_some_and(|s| s.ident == "ToolContext" && s.arguments.is_empty()))
}

/// The text of the `///` lines, one paragraph per blank line, common indentation removed.
fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(pair) => match &pair.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => Some(text.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|text| text.split('\n').map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool name the model's APIs accept: `^[A-Za-z0-9_-]{1,64}$`.
fn check_name(name: &LitStr) -> syn::Result<()> {
    let text = name.value();
    let valid = !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(syn::Error::new(
            name.span(),
            format!("tool name `{text}` is not 1–64 letters, digits, `_` or `-`"),
        ))
    }
}

fn annotations(options: &Options) -> TokenStream {
    let base = if options.read_only {
        quote! { ::mux::tool::ToolAnnotations::read_only() }
    } else {
        quote! { ::mux::tool::ToolAnnotations::default() }
    };
    let mut sets = Vec::new();
    if options.destructive {
        sets.push(quote! { annotations.destructive = true; });
    }
    if options.idempotent {
        sets.push(quote! { annotations.idempotent = true; });
    }
    if options.open_world {
        sets.push(quote! { annotations.open_world = true; });
    }
    if sets.is_empty() {
        return base;
    }
    quote! {{
        let mut annotations = #base;
        #(#sets)*
        annotations
    }}
}

/// `get_weather` → `GetWeather`.
fn camel_case(snake: &str) -> String {
    snake
        .trim_start_matches("r#")
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_camel_case() {
        assert_eq!(camel_case("get_weather"), "GetWeather");
        assert_eq!(camel_case("add"), "Add");
        assert_eq!(camel_case("_x__y_"), "XY");
    }

    #[test]
    fn docs_lose_their_common_indentation() {
        let function: ItemFn = syn::parse_quote! {
            /// Adds two numbers.
            ///
            ///   Indented.
            async fn add() {}
        };
        assert_eq!(
            doc_text(&function.attrs),
            "Adds two numbers.\n\n  Indented."
        );
    }

    #[test]
    fn bad_input_is_a_spanned_error_not_a_panic() {
        let cases: [(TokenStream, TokenStream, &str); 6] = [
            (
                quote!(),
                quote!(
                    fn f() {}
                ),
                "async fn",
            ),
            (
                quote!(),
                quote!(
                    async fn f() {}
                ),
                "description",
            ),
            (
                quote!(bogus),
                quote!(
                    /// d
                    async fn f() {}
                ),
                "unknown",
            ),
            (
                quote!(name = "a b"),
                quote!(
                    /// d
                    async fn f() {}
                ),
                "not 1–64",
            ),
            (
                quote!(),
                quote!(
                    /// d
                    async fn f<T>(x: T) {}
                ),
                "generic",
            ),
            (
                quote!(),
                quote!(
                    /// d
                    async fn f((a, b): (u8, u8)) {}
                ),
                "plain name",
            ),
        ];
        for (attr, item, says) in cases {
            let err = match expand(attr, item) {
                Ok(_) => panic!("accepted"),
                Err(err) => err.to_string(),
            };
            assert!(err.contains(says), "{err}");
        }
    }
}
