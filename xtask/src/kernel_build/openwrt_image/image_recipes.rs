//! A device's images that check a size, as `device-fit.json` records
//! them: the recipes make printed, with the device's variables put in,
//! and the checkout's step definitions checked against what
//! [`crate::measure::whole_image`] sizes.

use crate::inputs::openwrt::image::DeviceRecipe;
use crate::measure::whole_image::{check_definitions, has_check};
use crate::results::device_fit::ImageRecipe;

/// `recipe`'s images that check a size, as `device-fit.json` records
/// them ([`ImageRecipe`]), with `$(BLOCKSIZE)` and each other `$(NAME)`
/// make printed for the device (`KERNEL_SIZE`, `IMAGE_SIZE`) replaced by
/// its value (image.mk expands them when the recipe runs), and its block
/// size. An image whose steps up to its last `check-size`
/// the checkout defines otherwise than
/// [`crate::measure::whole_image::IMAGE_DEFINITIONS`] says has the
/// reason as its error.
pub fn image_recipes(recipe: &DeviceRecipe) -> (Option<String>, Vec<ImageRecipe>) {
    let blocksize = recipe.var("BLOCKSIZE").map(str::to_string);
    let images = recipe
        .images
        .iter()
        .filter(|(_, r)| has_check(r))
        .map(|(image, r)| {
            let mut text = r.clone();
            for (name, value) in &recipe.vars {
                if !value.is_empty() {
                    text = text.replace(&format!("$({name})"), value);
                }
            }
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            ImageRecipe {
                image: image.clone(),
                error: check_definitions(&recipe.image_definitions, &text).err(),
                recipe: text,
            }
        })
        .collect();
    (blocksize, images)
}
