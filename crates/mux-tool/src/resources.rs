//! A typed map of shared objects that tools reach through their context.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, PoisonError, RwLock};

type Slot = Arc<dyn Any + Send + Sync>;

/// The map's keys are type ids, already hashes: no keyed hash over them (a run makes a layer
/// of its own, so this is on every run's path).
type Slots = HashMap<TypeId, Slot, BuildHasherDefault<TypeIdHasher>>;

/// Passes a [`TypeId`]'s own bits through (folded, for other writes).
#[derive(Default)]
struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = self.0.rotate_left(5) ^ value;
    }
}

/// Shared resources keyed by type: a todo list, an HTTP client, a project root.
///
/// Cloning is cheap and clones share the same map.
///
/// ```
/// use mux_tool::Resources;
///
/// struct ProjectRoot(std::path::PathBuf);
///
/// let resources = Resources::new();
/// resources.insert(ProjectRoot("/srv/app".into()));
/// let root = resources.get::<ProjectRoot>().expect("inserted above");
/// assert_eq!(root.0, std::path::Path::new("/srv/app"));
/// ```
#[derive(Clone, Default)]
pub struct Resources {
    map: Arc<RwLock<Slots>>,
    parent: Option<Arc<Resources>>,
}

impl Resources {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// A layer over `self`: values inserted into the child stay in it, and lookups fall back to
    /// `self` (and its parents). Useful for per-run values beside process-wide ones.
    ///
    /// ```
    /// use mux_tool::Resources;
    ///
    /// let shared = Resources::new();
    /// shared.insert(1u32);
    /// let run = shared.child();
    /// run.insert("per run");
    /// assert_eq!(*run.get::<u32>().unwrap(), 1);
    /// assert!(shared.get::<&str>().is_none());
    /// ```
    pub fn child(&self) -> Resources {
        Resources {
            map: Arc::default(),
            parent: Some(Arc::new(self.clone())),
        }
    }

    /// Stores `value`, replacing any earlier value of the same type, and returns the earlier one.
    pub fn insert<T: Any + Send + Sync>(&self, value: T) -> Option<Arc<T>> {
        self.insert_arc(Arc::new(value))
    }

    /// Stores a value that is already shared.
    pub fn insert_arc<T: Any + Send + Sync>(&self, value: Arc<T>) -> Option<Arc<T>> {
        let previous = self
            .map
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(TypeId::of::<T>(), value);
        previous.and_then(|slot| slot.downcast::<T>().ok())
    }

    /// The value of type `T`, if one was stored here or in a parent.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let slot = self
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&TypeId::of::<T>())
            .cloned();
        match slot {
            Some(slot) => slot.downcast::<T>().ok(),
            None => self.parent.as_ref()?.get::<T>(),
        }
    }

    /// The value of type `T` (here or in a parent), inserting `make()` here first if there is
    /// none.
    pub fn get_or_insert_with<T: Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> Arc<T> {
        if !self.contains_here::<T>()
            && let Some(inherited) = self.parent.as_ref().and_then(|parent| parent.get::<T>())
        {
            return inherited;
        }
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        let id = TypeId::of::<T>();
        if let Some(existing) = map
            .get(&id)
            .cloned()
            .and_then(|slot| slot.downcast::<T>().ok())
        {
            return existing;
        }
        let value = Arc::new(make());
        map.insert(id, Arc::clone(&value) as Slot);
        value
    }

    /// Whether a value of type `T` is stored here or in a parent.
    pub fn contains<T: Any + Send + Sync>(&self) -> bool {
        self.contains_here::<T>()
            || self
                .parent
                .as_ref()
                .is_some_and(|parent| parent.contains::<T>())
    }

    fn contains_here<T: Any + Send + Sync>(&self) -> bool {
        self.map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&TypeId::of::<T>())
    }

    /// The number of values stored in this layer (parents not counted).
    pub fn len(&self) -> usize {
        self.map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resources")
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_sees_its_parent_and_shadows_it() {
        let parent = Resources::new();
        parent.insert(String::from("parent"));
        parent.insert(7u8);
        let child = parent.child();
        child.insert(String::from("child"));
        assert_eq!(*child.get::<String>().unwrap(), "child");
        assert_eq!(*parent.get::<String>().unwrap(), "parent");
        assert_eq!(*child.get::<u8>().unwrap(), 7);
        assert!(child.contains::<u8>());
        assert_eq!(child.len(), 1);
        // Values inserted into the parent later are visible through the child.
        parent.insert(1.5f64);
        assert_eq!(*child.get::<f64>().unwrap(), 1.5);
        // get_or_insert_with finds the inherited value instead of shadowing it.
        assert_eq!(*child.get_or_insert_with(|| 9u8), 7);
        assert_eq!(*child.get_or_insert_with(|| 3u16), 3);
        assert!(parent.get::<u16>().is_none());
    }
}
